/**
 * The HTTP client of `backend_influxdb_http` (InfluxDB 1.x `POST /write`) and
 * `backend_influxdb_http_v2` (2.x `POST /api/v2/write`): an undici `Pool` per resource
 * instance (undici is loaded by the first resource, not by every node), one POST of every
 * line of a write, timestamps always sent in ns (converted from the resource's `precision`).
 *
 * Invariants:
 * - A write is one request: InfluxDB answers 204 once every point is in its WAL.
 * - 400, 413 and 422 are refusals for good ({@link WriteRefused}: a line InfluxDB cannot
 *   parse, a field type conflict, a body too large), which the kit splits to find the
 *   refused points. InfluxDB 1.x may have written the other points of a refused request
 *   (a "partial write"): written again, each point overwrites itself (same series, same
 *   time), so the split adds no duplicate. Any other status (401, 403, 404 database not found,
 *   429, 5xx), a connection error or no answer within {@link REQUEST_TIMEOUT_MS} is
 *   transient: the write is sent again once connected.
 * - Nothing thrown or logged shows the password or token.
 */
import type { ConnectionOptions } from 'node:tls'
import type { Pool } from 'undici'
import { WriteRefused, type DataClient } from '../kit/data/index.js'
import { lineOf, influxWrites, type InfluxWrite } from './write.js'
import type { Precision } from './line-protocol.js'

/** How long one request may take, in ms. */
const REQUEST_TIMEOUT_MS = 15_000
/** How long a new connection may take, in ms. */
const CONNECT_TIMEOUT_MS = 5000
/** Statuses that refuse the points themselves. */
const REFUSED = new Set([400, 413, 422])

/** An HTTP resource's settings, read from its config. */
export interface InfluxHttpSettings {
  host: string
  port: number
  https: boolean
  /** Node's TLS options (files read), with `https`. */
  tls: ConnectionOptions | undefined
  poolSize: number
  precision: Precision
  /** 1.x: `database`, `username`, `password`; 2.x: `org`, `bucket`, `token`. */
  api: { version: 1, database: string, username: string, password: string } | { version: 2, org: string, bucket: string, token: string }
}

/** A {@link DataClient} writing to InfluxDB over HTTP (see the module's invariants). */
export async function influxHttpClient (s: InfluxHttpSettings): Promise<DataClient<InfluxWrite>> {
  const { Pool } = await import('undici')
  const origin = `${s.https ? 'https' : 'http'}://${s.host.includes(':') ? `[${s.host}]` : s.host}:${s.port}`
  const pool: Pool = new Pool(origin, {
    connections: s.poolSize,
    headersTimeout: REQUEST_TIMEOUT_MS,
    bodyTimeout: REQUEST_TIMEOUT_MS,
    connect: { ...s.tls, timeout: CONNECT_TIMEOUT_MS }
  })
  const api = s.api
  const headers: Record<string, string> = { 'content-type': 'text/plain; charset=utf-8' }
  let writePath: string
  if (api.version === 1) {
    writePath = `/write?${new URLSearchParams({ db: api.database, precision: 'ns' }).toString()}`
    if (api.username !== '') headers.authorization = 'Basic ' + Buffer.from(`${api.username}:${api.password}`).toString('base64')
  } else {
    writePath = `/api/v2/write?${new URLSearchParams({ org: api.org, bucket: api.bucket, precision: 'ns' }).toString()}`
    headers.authorization = `Token ${api.token}`
  }
  const address = `influxdb ${origin}`

  /** One request; the status and InfluxDB's error text (the body of a status other than 2xx). */
  const request = async (method: 'GET' | 'POST', path: string, body?: string): Promise<{ status: number, text: string }> => {
    const res = await pool.request({ method, path, headers, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    const text = await res.body.text()
    return { status: res.statusCode, text }
  }
  const errorText = (text: string): string => {
    try {
      const parsed = JSON.parse(text) as { error?: string, message?: string }
      return parsed.error ?? parsed.message ?? text.trim()
    } catch {
      return text.trim()
    }
  }

  return {
    address,
    async connect () {
      const ping = await request('GET', '/ping')
      if (ping.status !== 204 && ping.status !== 200) throw new Error(`${address}/ping answered ${ping.status}`)
      if (api.version === 1) {
        // an empty write checks the credentials and the database, and writes nothing
        const probe = await request('POST', writePath, '')
        if (probe.status !== 204) throw new Error(`${address}: a write to database ${JSON.stringify(api.database)} answered ${probe.status}: ${errorText(probe.text)}`)
      } else {
        const q = new URLSearchParams({ org: api.org, name: api.bucket }).toString()
        const found = await request('GET', `/api/v2/buckets?${q}`)
        if (found.status !== 200) throw new Error(`${address}: looking up bucket ${JSON.stringify(api.bucket)} answered ${found.status}: ${errorText(found.text)}`)
        const buckets = (JSON.parse(found.text) as { buckets?: unknown[] }).buckets ?? []
        if (buckets.length === 0) throw new Error(`${address}: org ${JSON.stringify(api.org)} has no bucket ${JSON.stringify(api.bucket)}`)
      }
    },
    async alive () {
      try {
        const ping = await request('GET', '/ping')
        return ping.status === 204 || ping.status === 200
      } catch {
        return false
      }
    },
    async write (writes) {
      const body = writes.flatMap((w) => w.p.map((p) => lineOf(p, s.precision, 'ns'))).join('\n')
      const answer = await request('POST', writePath, body)
      if (answer.status >= 200 && answer.status < 300) return
      const why = `${address} answered ${answer.status}: ${errorText(answer.text)}`
      if (REFUSED.has(answer.status)) throw new WriteRefused(why)
      throw new Error(why)
    },
    ...influxWrites,
    close: async () => { await pool.close() }
  }
}
