/**
 * The client of `backend_clickhouse`: the official `@clickhouse/client` (HTTP interface),
 * loaded by the first resource, not by every node; one client (its keep-alive pool of
 * `pool_size` sockets) per resource instance.
 *
 * Invariants:
 * - A write is one `INSERT INTO <table> (<columns>) FORMAT JSONEachRow` per run of writes
 *   for the same table and columns (one per batch when one action uses the resource): the
 *   values travel only as JSON rows. ClickHouse parses the whole body before it writes a
 *   block, so a batch with a row it cannot read (a type mismatch) writes nothing.
 * - An error the server answers (`Code: <n>`) is a refusal for good ({@link WriteRefused}:
 *   an unknown table or column, a value of the wrong type, a syntax error), which the kit
 *   splits to find the refused rows; but for the codes in {@link TRANSIENT_CODES} (credentials,
 *   database, overload, shutdown), and anything without a code (a connection refused or
 *   reset, no answer within {@link REQUEST_TIMEOUT_MS}), written again once connected.
 * - Several runs in one call (several actions on one resource) are not one transaction: when
 *   one is refused after others were written, it is split here, row by row, and the refused
 *   rows are named in {@link WriteRefused.rows}; a connection lost in between may write the
 *   earlier runs again.
 * - Nothing thrown or logged shows the password.
 */
import { Agent } from 'node:https'
import type { ConnectionOptions } from 'node:tls'
import type { ClickHouseClient } from '@clickhouse/client'
import { WriteRefused, type DataClient } from '../kit/data/index.js'
import { quoteName } from './template.js'
import { clickhouseWrites, type ClickhouseWrite } from './write.js'

/** How long one request may take, in ms. */
const REQUEST_TIMEOUT_MS = 15_000

/**
 * Server error codes that are about the server or the resource's config, not the rows:
 * UNKNOWN_DATABASE 81, TIMEOUT_EXCEEDED 159, READONLY 164, UNKNOWN_USER 192, WRONG_PASSWORD
 * 193, REQUIRED_PASSWORD 194, TOO_MANY_SIMULTANEOUS_QUERIES 202, SOCKET_TIMEOUT 209,
 * NETWORK_ERROR 210, MEMORY_LIMIT_EXCEEDED 241, TABLE_IS_READ_ONLY 242, TOO_MANY_PARTS 252,
 * QUERY_WAS_CANCELLED 394, AUTHENTICATION_FAILED 516, ACCESS_DENIED 497.
 */
export const TRANSIENT_CODES = new Set([81, 159, 164, 192, 193, 194, 202, 209, 210, 241, 242, 252, 394, 497, 516])

/** A resource's settings, read from its config. */
export interface ClickhouseSettings {
  /** `http(s)://host:port`. */
  url: string
  user: string
  password: string
  database: string
  poolSize: number
  /** Node's TLS options (files read), for an https URL. */
  tls: ConnectionOptions | undefined
}

/** The server's error code in `err`, or undefined when it is not a server's answer. */
export function serverCode (err: unknown): number | undefined {
  const code = (err as { code?: unknown })?.code
  if (typeof code === 'string' && /^\d+$/.test(code)) return Number(code) // ClickHouseError (newer servers)
  // 18.16's error text is not parsed by the client: "Code: 60, e.displayText() = DB::Exception: ..."
  const m = /^Code: (\d+)[.,]/.exec((err as Error)?.message ?? '')
  return m === null ? undefined : Number(m[1])
}

/** The part of a server's error text worth showing. */
function shortText (err: unknown): string {
  const text = (err as Error)?.message ?? String(err)
  const m = /DB::Exception: (.*?)(, e\.what\(\) = DB::Exception|\s*\(version [^)]*\))?\s*$/s.exec(text)
  return (m?.[1] ?? text).trim().slice(0, 500)
}

/** A {@link DataClient} writing to ClickHouse (see the module's invariants). */
export async function clickhouseClient (s: ClickhouseSettings): Promise<DataClient<ClickhouseWrite>> {
  const { createClient, ClickHouseLogLevel } = await import('@clickhouse/client')
  const https = s.url.startsWith('https:')
  const agent = https ? new Agent({ ...s.tls, keepAlive: true, maxSockets: s.poolSize }) : undefined
  const client: ClickHouseClient = createClient({
    url: s.url,
    username: s.user,
    password: s.password,
    database: s.database,
    max_open_connections: s.poolSize,
    request_timeout: REQUEST_TIMEOUT_MS,
    http_agent: agent,
    // errors reach the caller; the client's own log would print each one again
    log: { level: ClickHouseLogLevel.OFF }
  })
  const address = `clickhouse ${new URL(s.url).origin}`
  const why = (err: unknown): string => `${address}: ${shortText(err)}`

  /** One insert; a refusal for good as {@link WriteRefused}, anything else as a plain error. */
  const insert = async (w: ClickhouseWrite): Promise<void> => {
    try {
      await client.insert({ table: w.t, columns: w.c.map(quoteName) as [string, ...string[]], values: w.r, format: 'JSONEachRow' })
    } catch (err) {
      const code = serverCode(err)
      if (code !== undefined && !TRANSIENT_CODES.has(code)) throw new WriteRefused(`${why(err)} (code ${code})`, { cause: err })
      throw new Error(why(err), { cause: err })
    }
  }

  return {
    address,
    async connect () {
      try {
        // a query as the user on the database checks both
        await (await client.query({ query: 'SELECT 1', format: 'JSONEachRow' })).json()
      } catch (err) {
        throw new Error(why(err))
      }
    },
    async alive () {
      // GET /ping (the server's health check)
      const ping = await client.ping().catch(() => ({ success: false }))
      return ping.success
    },
    async write (writes) {
      // runs of writes for the same table and columns, each one insert
      const runs: ClickhouseWrite[] = []
      for (const w of writes) {
        const last = runs.at(-1)
        if (last !== undefined && last.t === w.t && last.c.length === w.c.length && last.c.every((c, i) => c === w.c[i])) last.r.push(...w.r)
        else runs.push({ t: w.t, c: w.c, r: [...w.r] })
      }
      const refused: number[] = []
      let reason: WriteRefused | undefined
      let first = 0
      for (let i = 0; i < runs.length; i++) {
        try {
          await insert(runs[i])
        } catch (err) {
          if (!(err instanceof WriteRefused)) throw err
          // nothing written yet: the kit finds the refused rows
          if (i === 0) throw err
          reason = err
          const rows = clickhouseWrites.split(runs[i])
          for (let r = 0; r < rows.length; r++) {
            try {
              await insert(rows[r])
            } catch (e) {
              if (!(e instanceof WriteRefused)) throw e
              refused.push(first + r)
            }
          }
        }
        first += runs[i].r.length
      }
      if (reason !== undefined) throw new WriteRefused(reason.message, { cause: reason, rows: refused })
    },
    ...clickhouseWrites,
    close: async () => {
      await client.close()
      agent?.destroy()
    }
  }
}
