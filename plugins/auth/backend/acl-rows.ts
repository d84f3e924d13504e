/**
 * The ACL forms of EMQ X 4.4's external backends, as pure decisions over what a backend
 * returned for one client. Topic matching is the built-in ACL's (`node/acl/acl-matcher.ts`):
 * a subscribe is decided on its filter (the rule filter must match the requested filter
 * read as a name; `$share/g/t` on `t`), and a wildcard first level never matches a `$` topic.
 * `%u`/`%c` are replaced by the client's username/client id before matching, and the
 * result is compared literally: an id that is itself `+` or `#`, or a missing username,
 * makes that filter match nothing, and an id's `/` never adds levels.
 *
 * - **SQL rows** (`emqx_acl_mysql`, `emqx_acl_pgsql`): `{allow, ipaddr, username, clientid,
 *   access, topic}`; `allow` 1 allow / 0 deny; `access` 1 subscribe / 2 publish / 3 both;
 *   `username = '$all'` is everyone, otherwise the non-empty `ipaddr` (an address or CIDR
 *   block), `username` and `clientid` must all match; `eq T` matches the topic or filter `T`
 *   exactly; `%u`/`%c` levels stand for the client's username/client id. The first row
 *   that matches decides, in the order given; none → `ignore`.
 *   EMQ X 4.4 built its list reversed, so there the *last* returned row won: the SQL plugins
 *   (plugins/auth/sql/) reverse the rows before calling this, so EMQ X's tables decide the same.
 *   A row with an unknown `allow`/`access`, no who at all, a bad CIDR block or a bad topic
 *   filter makes the whole decision throw {@link AclRowError} (EMQ X crashed the check):
 *   skipping it could turn a meant deny into a later allow.
 * - **Redis** (`HGETALL mqtt_acl:%u`): field = topic filter, value = access bitmask (1 sub,
 *   2 pub, 3 both). Allow-only: a match → `allow`; entries but no match → `deny` (EMQ X 4.4's
 *   `emqx_acl_redis`) unless the caller asks for `ignore`; no entries → `ignore`. `%u`/`%c`
 *   are substituted anywhere in a level (EMQ X replaced them anywhere in the field), and the
 *   result compared literally. Malformed entries never match.
 * - **JWT** (`auth.jwt.acl_claim_name`, default `acl`): `{ "sub": [...], "pub": [...],
 *   "all": [...] }` filters. No claim → `ignore`; claim and an expired `exp` → `deny`; a filter
 *   in `all` or in the action's list matching → `allow`; otherwise `deny` (`emqx_auth_jwt`).
 */
import { createAclRuleSet, parseCidr, type AclAction, type AclRule, type AclTopic, type AclWho } from '../../../node/acl/index.js'
import { filterError } from '../../../node/mqtt/topic.js'
import type { BackendVerdict } from './verdict.js'

/** The client an ACL request is about. */
export interface AclClient {
  clientId: string
  username?: string
  /** The peer's IP address as the socket reports it. */
  peerhost: string
}

/** One row of EMQ X's `mqtt_acl` table, as a driver returns it (numbers, text or buffers; NULL as null). */
export interface AclRow {
  allow: unknown
  ipaddr?: unknown
  username?: unknown
  clientid?: unknown
  access: unknown
  topic: unknown
}

/** A row the ACL cannot read. `row` counts from 1 in the order given. */
export class AclRowError extends Error {
  /** Stable machine-readable code. */
  readonly code = 'STARLING_ACL_ROW_INVALID'
  readonly row: number

  constructor (row: number, detail: string) {
    super(`ACL row ${row}: ${detail}`)
    this.name = 'AclRowError'
    this.row = row
  }
}

/**
 * Compiles SQL ACL rows into the built-in ACL's rules for `client` (`line` is the row
 * number), in order, with the client's ids already in the `%u`/`%c` levels.
 */
export function compileAclRows (rows: readonly AclRow[], client: AclClient): AclRule[] {
  return rows.map((row, i) => {
    const n = i + 1
    const fail = (detail: string): never => { throw new AclRowError(n, detail) }
    const allow = integer(row.allow)
    if (allow !== 0 && allow !== 1) fail(`bad allow ${describe(row.allow)}: expected 1 (allow) or 0 (deny)`)
    const access = integer(row.access)
    if (access !== 1 && access !== 2 && access !== 3) fail(`bad access ${describe(row.access)}: expected 1 (subscribe), 2 (publish) or 3 (pubsub)`)
    const topicText = text(row.topic)
    const eq = topicText.startsWith('eq ')
    const filter = eq ? topicText.slice(3) : topicText
    const error = filter === '' ? 'empty topic' : eq ? null : filterError(filter)
    if (error !== null) fail(`bad topic ${describe(row.topic)}: ${error}`)
    return {
      permission: allow === 1 ? 'allow' : 'deny',
      who: rowWho(row, fail),
      access: access === 1 ? 'subscribe' : access === 2 ? 'publish' : 'pubsub',
      topics: eq ? [{ text: filter, eq: true, levels: [filter], placeholders: false }] : renderedTopics(filter, client, false),
      line: n
    }
  })
}

/**
 * The first of `rows` (in order) that matches `client`, `action` and `topic` decides;
 * none → `ignore`. Throws {@link AclRowError} for a row it cannot read.
 */
export function decideAclRows (rows: readonly AclRow[], client: AclClient, action: AclAction, topic: string): BackendVerdict {
  if (rows.length === 0) return 'ignore'
  const rule = createAclRuleSet(compileAclRows(rows, client), 'deny').matchingRule(accessClient(client), action, topic)
  return rule?.permission ?? 'ignore'
}

/** An `HGETALL` reply: an object (ioredis, node-redis) or the flat `[field, value, ...]` list. */
export type RedisAclHash = Readonly<Record<string, string | number | Buffer>> | ReadonlyArray<string | Buffer>

/**
 * Decides on the `mqtt_acl:<username>` hash: a field whose filter matches and whose access
 * bits include the action → `allow`; entries but none matching → `nomatch` (EMQ X 4.4: deny);
 * no entries → `ignore`.
 */
export function decideRedisAcl (hash: RedisAclHash, client: AclClient, action: AclAction, topic: string,
  nomatch: 'deny' | 'ignore' = 'deny'): BackendVerdict {
  const entries: Array<[string, unknown]> = []
  if (Array.isArray(hash)) {
    for (let i = 0; i + 1 < hash.length; i += 2) entries.push([text(hash[i]), hash[i + 1]])
  } else entries.push(...Object.entries(hash))
  if (entries.length === 0) return 'ignore'
  const bit = action === 'subscribe' ? 1 : 2
  const topics: AclTopic[] = []
  for (const [field, value] of entries) {
    const access = integer(value)
    if (access === undefined || (access & bit) === 0 || filterError(field) !== null) continue
    topics.push(...renderedTopics(field, client, true))
  }
  return matchesAny(topics, client, action, topic) ? 'allow' : nomatch
}

/**
 * Decides on a verified JWT's claims: `claims[claimName]` absent → `ignore`; present with an
 * expired or unreadable `exp` (seconds since the epoch, a number or numeric text) → `deny`;
 * a filter of its `all` list or of `pub`/`sub` (by `action`) matching → `allow`; else `deny`.
 */
export function decideJwtAcl (claims: Readonly<Record<string, unknown>> | undefined, claimName: string, client: AclClient,
  action: AclAction, topic: string, nowSeconds = Date.now() / 1000): BackendVerdict {
  const acl = claims?.[claimName]
  if (claims === undefined || acl === undefined) return 'ignore'
  if ('exp' in claims) {
    const exp = typeof claims.exp === 'string' && claims.exp.trim() !== '' ? Number(claims.exp) : claims.exp
    if (typeof exp !== 'number' || !Number.isFinite(exp) || nowSeconds > exp) return 'deny'
  }
  const lists = typeof acl === 'object' && acl !== null ? acl as Record<string, unknown> : {}
  const topics: AclTopic[] = []
  for (const list of [lists.all, lists[action === 'subscribe' ? 'sub' : 'pub']]) {
    if (!Array.isArray(list)) continue
    for (const filter of list) if (typeof filter === 'string' && filterError(filter) === null) topics.push(...renderedTopics(filter, client, false))
  }
  return matchesAny(topics, client, action, topic) ? 'allow' : 'deny'
}

/** Whether one of `topics` (for everyone) matches, with the built-in ACL's matcher. */
function matchesAny (topics: AclTopic[], client: AclClient, action: AclAction, topic: string): boolean {
  if (topics.length === 0) return false
  const rule: AclRule = { permission: 'allow', who: { kind: 'all' }, access: 'pubsub', topics, line: 0 }
  return createAclRuleSet([rule], 'deny').matchingRule(accessClient(client), action, topic) !== null
}

/** A row's who: `$all`, or the AND of its non-empty ipaddr, username and clientid. */
function rowWho (row: AclRow, fail: (detail: string) => never): AclWho {
  const username = text(row.username)
  if (username === '$all') return { kind: 'all' }
  const items: AclWho[] = []
  const ipaddr = text(row.ipaddr)
  if (ipaddr !== '') {
    const block = parseCidr(ipaddr) ?? fail(`bad ipaddr ${JSON.stringify(ipaddr)}: expected an IP address or CIDR block such as 192.168.0.0/24`)
    items.push({ kind: 'ipaddr', blocks: [block] })
  }
  if (username !== '') items.push({ kind: 'user', name: username })
  const clientid = text(row.clientid)
  if (clientid !== '') items.push({ kind: 'client', id: clientid })
  if (items.length === 0) fail('no ipaddr, username or clientid: give at least one, or username $all for everyone')
  return items.length === 1 ? items[0] : { kind: 'and', items }
}

/**
 * `filter` with the client's ids in place of its `%u`/`%c` levels (`anywhere`: inside
 * levels too, as EMQ X's Redis ACL did), as a topic for the matcher; none (the filter
 * cannot match) when a needed id is missing or is itself a wildcard (`+`, `#`), so a
 * client named `#` never widens `users/%u/#`. A value's `/` stays inside its level, so it
 * is compared literally and never adds levels.
 */
function renderedTopics (filter: string, client: AclClient, anywhere: boolean): AclTopic[] {
  const levels = filter.split('/')
  if (!filter.includes('%')) return [{ text: filter, eq: false, levels, placeholders: false }]
  for (let i = 0; i < levels.length; i++) {
    const level = levels[i]
    if (level !== '%u' && level !== '%c' && !(anywhere && /%[uc]/.test(level))) continue
    let missing = false
    const out = level.replace(/%[uc]/g, (p) => {
      const value = p === '%u' ? client.username : client.clientId
      if (value === undefined) missing = true
      return value ?? ''
    })
    if (missing || out === '+' || out === '#') return []
    levels[i] = out
  }
  return [{ text: filter, eq: false, levels, placeholders: false }]
}

function accessClient (client: AclClient): { clientId: string, username: string | undefined, peerhost: string } {
  return { clientId: client.clientId, username: client.username, peerhost: client.peerhost }
}

/** A column as text: strings as they are, buffers as UTF-8, NULL as `''`. */
function text (value: unknown): string {
  if (value === null || value === undefined) return ''
  if (Buffer.isBuffer(value)) return value.toString('utf8')
  return String(value)
}

/** A column as a small integer (`1`, `'1'`, `1n`, `true`), or undefined. */
function integer (value: unknown): number | undefined {
  if (typeof value === 'boolean') return value ? 1 : 0
  const t = text(value).trim()
  return /^[0-9]{1,9}$/.test(t) ? Number(t) : undefined
}

function describe (value: unknown): string {
  return value === null || value === undefined ? 'NULL' : JSON.stringify(text(value))
}
