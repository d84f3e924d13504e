/**
 * The management API as the pages call it: `/api/v3/...` on the listener that served the
 * page, signed in by the session cookie (HttpOnly: the page never sees the token). Every
 * write carries `X-Requested-With`, which the listener asks of cookie-authenticated writes
 * (its CSRF check). Answers are the API's envelope `{code, data, meta}`; an error answer
 * becomes an {@link ApiError} with the spec's code and message, and a 401 also tells the
 * session (session.ts) that the user is signed out.
 */

/** An error answer of the API: HTTP status, the spec's code, its message. */
export class ApiError extends Error {
  constructor (readonly status: number, readonly code: number | undefined, message: string) {
    super(message)
    this.name = 'ApiError'
  }
}

/** Pagination of a list answer (`_page`, `_limit`, `count`). */
export interface PageMeta {
  page: number
  limit: number
  count: number
  hasnext?: boolean
}

/** A list answer with its pagination. */
export interface Paged<T> {
  data: T[]
  meta: PageMeta
}

type Query = Record<string, string | number | boolean | undefined | null>

let onSignedOut: () => void = () => {}

/** What to do when an answer says the session ended (session.ts sets it). */
export function whenSignedOut (fn: () => void): void {
  onSignedOut = fn
}

/** `/api/v3` + `path` with `query` (empty values left out). */
export function apiUrl (path: string, query: Query = {}): string {
  const qs = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== '') qs.set(k, String(v))
  }
  const q = qs.toString()
  return `/api/v3${path}${q === '' ? '' : '?' + q}`
}

/** Calls the API; resolves with the whole envelope (`data`, `meta`, ...). */
export async function call<T = unknown> (method: string, path: string, body?: unknown, query: Query = {}): Promise<{ code: number, data: T, meta?: PageMeta }> {
  const headers: Record<string, string> = { Accept: 'application/json', 'X-Requested-With': 'XMLHttpRequest' }
  if (body !== undefined) headers['Content-Type'] = 'application/json'
  const res = await fetch(apiUrl(path, query), {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  let envelope: any
  try {
    envelope = await res.json()
  } catch {
    envelope = undefined
  }
  const failed = !res.ok || (typeof envelope?.code === 'number' && envelope.code !== 0)
  if (failed) {
    if (res.status === 401 && path !== '/auth') onSignedOut()
    throw new ApiError(res.status, envelope?.code, envelope?.message ?? `${res.status} ${res.statusText}`)
  }
  return envelope ?? { code: 0, data: undefined as T }
}

/** GET `path`: its `data`. */
export async function get<T = unknown> (path: string, query: Query = {}): Promise<T> {
  return (await call<T>('GET', path, undefined, query)).data
}

/** GET a paginated list: `data` and `meta`. */
export async function getPage<T = unknown> (path: string, query: Query = {}): Promise<Paged<T>> {
  const env = await call<T[]>('GET', path, undefined, query)
  return { data: env.data ?? [], meta: env.meta ?? { page: 1, limit: env.data?.length ?? 0, count: env.data?.length ?? 0 } }
}

/** POST `body` to `path`: its `data`. */
export async function post<T = unknown> (path: string, body: unknown = {}, query: Query = {}): Promise<T> {
  return (await call<T>('POST', path, body, query)).data
}

/** PUT `body` to `path`: its `data`. */
export async function put<T = unknown> (path: string, body: unknown = {}, query: Query = {}): Promise<T> {
  return (await call<T>('PUT', path, body, query)).data
}

/** DELETE `path`. */
export async function del<T = unknown> (path: string, query: Query = {}): Promise<T> {
  return (await call<T>('DELETE', path, undefined, query)).data
}

/** A path segment: `encodeURIComponent`, for client ids, topics and names in paths. */
export const seg = (s: string): string => encodeURIComponent(s)
