/**
 * Credentials inside values that are not credentials as a whole: a URL's userinfo
 * (`https://user:pass@host`) and its query-string secrets (`?token=...`), the values of
 * `name=value` lists (`auth.http.*.params`), and request headers (`Authorization: Bearer ...`).
 * Whatever serves, prints or logs such a value shows it through one of the `mask*` functions
 * here, with every credential part replaced by {@link REDACTED}; whatever takes a value back
 * (PUT plugin_configs, PUT resources) passes it through the matching `restore*` function, so
 * that a value sent back as it was shown keeps the stored credentials.
 *
 * Invariants:
 * - A masked value never contains a credential part of the value it was made from; the rest
 *   is kept byte for byte (no URL normalisation), so an operator still sees the host, the
 *   path and the other parameters.
 * - `restore(mask(stored), stored) === stored` for every stored value; a part that was not
 *   masked, or a part the stored value does not have, is taken as sent.
 */
import { REDACTED } from './schema-types.js'

/**
 * Names of query parameters, `name=value` pairs and headers whose value is a credential:
 * `password`, `passwd`, `pwd`, `token`, `access_token`, `secret`, `client_secret`, `key`,
 * `api_key`, `apikey`, `auth`, `authorization`, `credential`, `signature`, `sig`, `session`,
 * `cookie`, `jwt`. Wide on purpose: showing `******` for a harmless value costs less than
 * showing a credential.
 */
const CREDENTIAL_NAME = /pass|pwd|secret|token|key|auth|credential|sig|session|cookie|jwt|bearer/i

/** A value made only of placeholders (`%P`, `${password}`): the client's, filled per request, not a credential. */
const PLACEHOLDERS_ONLY = /^(?:%[A-Za-z]|\$\{[^}]*\})+$/

/** Headers whose value says how the body is encoded; every other header's value is masked. */
const PLAIN_HEADERS = new Set(['content-type', 'accept'])

/** Whether a parameter, pair or header called `name` carries a credential. */
export function isCredentialName (name: string): boolean {
  return CREDENTIAL_NAME.test(name)
}

/** `scheme://` then the authority up to `@` (the userinfo), when the URL has one. */
const USERINFO = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#@]*)@/

/** One `name=value` of a query string or list, with the value masked when it is a credential. */
function maskPair (pair: string): string {
  const eq = pair.indexOf('=')
  if (eq < 0) return pair
  const value = pair.slice(eq + 1)
  if (value === '' || value === REDACTED || PLACEHOLDERS_ONLY.test(value) || !isCredentialName(decodeName(pair.slice(0, eq)))) return pair
  return `${pair.slice(0, eq + 1)}${REDACTED}`
}

function decodeName (name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '))
  } catch {
    return name
  }
}

/** `text` split at its query string: [before `?`, query, `#` and after]; query is undefined without `?`. */
function splitQuery (text: string): [string, string | undefined, string] {
  const hash = text.indexOf('#')
  const body = hash < 0 ? text : text.slice(0, hash)
  const fragment = hash < 0 ? '' : text.slice(hash)
  const q = body.indexOf('?')
  return q < 0 ? [body, undefined, fragment] : [body.slice(0, q), body.slice(q + 1), fragment]
}

/**
 * `url` with its userinfo (`user:pass@`, shown `******@`) and the values of its credential
 * query parameters (`token=`, `password=`, `api_key=` ...) replaced by {@link REDACTED}.
 * Any text is accepted: what does not look like a URL is returned as it is.
 */
export function maskUrl (url: string): string {
  const withoutUser = url.replace(USERINFO, (_m, scheme: string, userinfo: string) => userinfo === '' ? `${scheme}@` : `${scheme}${REDACTED}@`)
  const [head, query, fragment] = splitQuery(withoutUser)
  return query === undefined ? withoutUser : `${head}?${query.split('&').map(maskPair).join('&')}${fragment}`
}

/** `name=value` pairs separated by `separator` (`clientid=%c,password=%P`), credential values masked. */
export function maskPairs (text: string, separator = ','): string {
  return text.split(separator).map(maskPair).join(separator)
}

/** A header's value as shown: {@link REDACTED} unless the header only says how the body is encoded. */
export function maskHeader (name: string, value: string): string {
  return value === '' || PLAIN_HEADERS.has(name.toLowerCase().replace(/_/g, '-')) ? value : REDACTED
}

/** Every header of `headers` masked ({@link maskHeader}); a value that is not text is masked too. */
export function maskHeaders (headers: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) =>
    [name, typeof value === 'string' ? maskHeader(name, value) : REDACTED]))
}

/**
 * A list of headers as `[{key, value}]` (EMQ X 4.4's `kafka_ext_headers`) with each value
 * masked as {@link maskHeader} does; an entry of another shape is kept as it is.
 */
export function maskHeaderList (list: unknown[]): unknown[] {
  return list.map((entry) => {
    const { key, value } = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>
    if (typeof key !== 'string' || value === undefined) return entry
    return { ...(entry as object), value: typeof value === 'string' ? maskHeader(key, value) : REDACTED }
  })
}

/** `sent`'s `[{key, value}]` headers with each {@link REDACTED} value taken from `stored`'s entry of the same key. */
export function restoreHeaderList (sent: unknown[], stored: unknown[]): unknown[] {
  const before = new Map<string, unknown>()
  for (const entry of stored) {
    const { key, value } = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>
    if (typeof key === 'string' && !before.has(key)) before.set(key, value)
  }
  return sent.map((entry) => {
    const { key, value } = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>
    return value === REDACTED && typeof key === 'string' && before.has(key) ? { ...(entry as object), value: before.get(key) } : entry
  })
}

/** The values of `pairs` by name (the first of each name). */
function pairValues (pairs: string[]): Map<string, string> {
  const out = new Map<string, string>()
  for (const pair of pairs) {
    const eq = pair.indexOf('=')
    if (eq >= 0 && !out.has(pair.slice(0, eq))) out.set(pair.slice(0, eq), pair.slice(eq + 1))
  }
  return out
}

/** `sent` pairs with each value that is {@link REDACTED} taken from the same name in `stored`. */
function restorePairList (sent: string[], stored: string[]): string[] {
  const known = pairValues(stored)
  return sent.map((pair) => {
    const eq = pair.indexOf('=')
    if (eq < 0 || pair.slice(eq + 1) !== REDACTED) return pair
    const value = known.get(pair.slice(0, eq))
    return value === undefined ? pair : `${pair.slice(0, eq + 1)}${value}`
  })
}

/**
 * The URL to store when `sent` comes back from a client that was shown {@link maskUrl} of
 * `stored`: a `******` userinfo and `name=******` query values are the stored ones.
 */
export function restoreUrl (sent: string, stored: string | undefined): string {
  if (stored === undefined || !sent.includes(REDACTED)) return sent
  const storedUser = USERINFO.exec(stored)?.[2]
  let out = sent.replace(USERINFO, (m, scheme: string, userinfo: string) =>
    userinfo === REDACTED && storedUser !== undefined ? `${scheme}${storedUser}@` : m)
  const [head, query, fragment] = splitQuery(out)
  if (query !== undefined) {
    const storedQuery = splitQuery(stored)[1] ?? ''
    out = `${head}?${restorePairList(query.split('&'), storedQuery.split('&')).join('&')}${fragment}`
  }
  return out
}

/** The pairs to store when `sent` comes back from a client shown {@link maskPairs} of `stored`. */
export function restorePairs (sent: string, stored: string | undefined, separator = ','): string {
  if (stored === undefined || !sent.includes(REDACTED)) return sent
  return restorePairList(sent.split(separator), stored.split(separator)).join(separator)
}

/**
 * The headers to store when `sent` comes back from a client shown {@link maskHeaders} of
 * `stored`: a header whose value is `******` keeps its stored value (when it has one).
 */
export function restoreHeaders (sent: Record<string, unknown>, stored: Record<string, unknown> | undefined): Record<string, unknown> {
  if (stored === undefined) return sent
  return Object.fromEntries(Object.entries(sent).map(([name, value]) =>
    [name, value === REDACTED && Object.hasOwn(stored, name) ? stored[name] : value]))
}
