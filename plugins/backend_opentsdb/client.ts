/**
 * The client of `backend_opentsdb`: OpenTSDB's HTTP API over an undici `Pool` per resource
 * instance (undici is loaded by the first resource, not by every node).
 *
 * Invariants:
 * - A write is `POST /api/put?<the action's query>` requests of at most the action's
 *   `max_batch_size` points each, in order, the next only once the previous answered.
 * - 204 (or 200 with a summary) is success. 400 is a refusal of points for good
 *   ({@link WriteRefused}): with `details` the server names the refused points and wrote the
 *   others, so the refused rows are named and nothing is sent again; without it the kit splits
 *   the write to find them, and the points OpenTSDB had taken are sent again (each overwrites
 *   itself: same metric, tags and timestamp). Any other status, a connection error or no answer
 *   within the request timeout is transient: the write is sent again once connected.
 * - A run whose data is no data point (no metric, a value that is not a number, no tags) is
 *   refused here, before any request, and named in `WriteRefused.rows`.
 */
import type { Pool } from 'undici'
import { WriteRefused, pingHealth, type DataClient } from '../kit/data/index.js'
import { opentsdbWrites, type DataPoint, type OpentsdbWrite } from './point.js'

/** How long one request may take beyond the action's `sync_timeout`, in ms. */
const REQUEST_TIMEOUT_MS = 15_000
/** How long a new connection may take, in ms. */
const CONNECT_TIMEOUT_MS = 5000

/** A resource's settings, read from its config. */
export interface OpentsdbSettings {
  /** `http(s)://host:port`. */
  origin: string
  poolSize: number
}

/** One request: its query, its points and their row numbers (across the writes). */
interface PutRequest { q: string, points: DataPoint[], rows: number[] }

/** `/api/put`'s answer with `summary` or `details`. */
interface PutAnswer { success?: number, failed?: number, errors?: Array<{ datapoint?: Partial<DataPoint>, error?: string }>, error?: { message?: string } }

/** The requests of `writes`, in order, and the rows refused before sending with the first reason. */
export function putRequestsOf (writes: readonly OpentsdbWrite[]): { requests: PutRequest[], refused: number[], reason: string | undefined } {
  const requests: PutRequest[] = []
  const refused: number[] = []
  let reason: string | undefined
  let row = 0
  for (const w of writes) {
    for (const p of w.p) {
      if ('e' in p) {
        refused.push(row++)
        reason ??= p.e
        continue
      }
      const last = requests.at(-1)
      if (last !== undefined && last.q === w.q && last.points.length < w.m) {
        last.points.push(p.d)
        last.rows.push(row++)
      } else {
        requests.push({ q: w.q, points: [p.d], rows: [row++] })
      }
    }
  }
  return { requests, refused, reason }
}

const identity = (p: Partial<DataPoint>): string => JSON.stringify([p.metric, Number(p.timestamp), Object.entries(p.tags ?? {}).sort()])

/** The rows of `request` that the errors of a `details` answer name (each error claims one point). */
export function refusedRowsOf (request: PutRequest, errors: NonNullable<PutAnswer['errors']>): number[] {
  const claimed = new Set<number>()
  for (const e of errors) {
    const id = identity(e.datapoint ?? {})
    const i = request.points.findIndex((p, n) => !claimed.has(n) && identity(p) === id)
    if (i >= 0) claimed.add(i)
  }
  return [...claimed].sort((a, b) => a - b).map((i) => request.rows[i])
}

/** A {@link DataClient} writing data points to OpenTSDB (see the module's invariants). */
export async function opentsdbClient (s: OpentsdbSettings): Promise<DataClient<OpentsdbWrite>> {
  const { Pool } = await import('undici')
  const pool: Pool = new Pool(s.origin, { connections: s.poolSize, connect: { timeout: CONNECT_TIMEOUT_MS } })
  const address = `opentsdb ${s.origin}`

  const request = async (method: 'GET' | 'POST', path: string, timeoutMs: number, body?: string): Promise<{ status: number, text: string }> => {
    const res = await pool.request({
      method, path, body, headers: body === undefined ? {} : { 'content-type': 'application/json' },
      headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal: AbortSignal.timeout(timeoutMs)
    })
    return { status: res.statusCode, text: await res.body.text() }
  }
  const version = async (): Promise<void> => {
    const v = await request('GET', '/api/version', REQUEST_TIMEOUT_MS)
    if (v.status !== 200) throw new Error(`${address}/api/version answered ${v.status}`)
  }
  const parse = (text: string): PutAnswer => {
    try {
      return JSON.parse(text) as PutAnswer
    } catch {
      return {}
    }
  }

  return {
    address,
    ...pingHealth((err) => `${address}: ${(err as Error).message}`, version),
    async write (writes) {
      const { requests, refused, reason: first } = putRequestsOf(writes)
      let reason = first
      for (const r of requests) {
        const syncTimeout = Number(new URLSearchParams(r.q).get('sync_timeout') ?? 0)
        const answer = await request('POST', `/api/put${r.q === '' ? '' : `?${r.q}`}`, REQUEST_TIMEOUT_MS + syncTimeout, JSON.stringify(r.points))
        if (answer.status === 204 || answer.status === 200) continue
        const body = parse(answer.text)
        const why = `${address}/api/put answered ${answer.status}` +
          (body.failed !== undefined ? ` (${body.failed} of ${r.points.length} points failed)` : '') +
          `: ${body.errors?.[0]?.error ?? body.error?.message ?? answer.text.trim().slice(0, 300)}`
        if (answer.status !== 400) throw new Error(why)
        const named = body.errors === undefined ? [] : refusedRowsOf(r, body.errors)
        // without details (or with errors that name fewer points than failed) the refused
        // points are unknown: the kit splits the write
        if (named.length === 0 || named.length < (body.failed ?? 0)) throw new WriteRefused(why)
        refused.push(...named)
        reason = why
      }
      if (refused.length > 0) throw new WriteRefused(`${address}: ${reason as string}`, { rows: refused.sort((a, b) => a - b) })
    },
    ...opentsdbWrites,
    close: async () => { await pool.close() }
  }
}
