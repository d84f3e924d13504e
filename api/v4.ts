/**
 * `/api/v4/`: EMQ X 4's management API, served beside `/api/v3/` from the same route table
 * (docs/api.md, "/api/v4/ and /status"). Every v3 endpoint is also at its v4 path; where
 * EMQ X 4.4's `emqx_mgmt_api_*` modules name things differently, v4 uses their names:
 *
 * - the clients resource: `/clients/...` (`list_clients`, `lookup_client`,
 *   `/clients/username/:username`, `DELETE /clients/:clientid` ...) over the same operations
 *   as v3's `/connections/...`, each item with `connected`;
 * - field names in answers: `clientid` for `client_id`, `ip_address` for a connection's
 *   `ipaddress`; a banned entry's `as` is `clientid` / `username` / `peerhost`;
 * - field names in request bodies: `clientid` is read as v3's `client_id` where v3's body has
 *   one (`/mqtt/publish`, `/mqtt/subscribe` ..., batches included); v3's own names are
 *   accepted too.
 *
 * The handlers are v3's: v4 only renames on the way in and out, so the two cannot drift.
 */
import type { RouteDef } from './route-table.js'

/** Where the v4 routes are mounted. */
export const V4_PREFIX = '/api/v4'

/** EMQ X 4.4's name of each answer field whose v3 name differs. */
const V4_FIELDS: Readonly<Record<string, string>> = { client_id: 'clientid', ipaddress: 'ip_address' }

/** EMQ X 4.4's banned `as` values for v3's. */
const V4_BANNED_AS: Readonly<Record<string, string>> = { client_id: 'clientid', ip_address: 'peerhost' }

/** v3 connection routes and the v4 clients route each is also served as (EMQ X 4.4's names). */
const CLIENT_ROUTES: Readonly<Record<string, { name: string, path: string }>> = {
  list_connections: { name: 'list_clients', path: '/clients/' },
  list_node_connections: { name: 'list_node_clients', path: '/nodes/:node/clients/' },
  lookup_connections: { name: 'lookup_client', path: '/clients/:clientid' },
  lookup_node_connections: { name: 'lookup_node_client', path: '/nodes/:node/clients/:clientid' },
  lookup_connection_via_username: { name: 'lookup_client_via_username', path: '/clients/username/:username' },
  lookup_node_connection_via_username: { name: 'lookup_node_client_via_username', path: '/nodes/:node/clients/username/:username' },
  kickout_connection: { name: 'kickout_client', path: '/clients/:clientid' }
}

/**
 * The v4 routes of `routes` (paths relative to {@link V4_PREFIX}): each v3 route, and the
 * clients routes beside the connections ones; handlers answer with v4's field names.
 */
export function v4Routes (routes: readonly RouteDef[]): RouteDef[] {
  const clients: RouteDef[] = []
  const others: RouteDef[] = []
  for (const route of routes) {
    const banned = route.path.startsWith('/banned')
    others.push({ ...route, handler: async (req) => v4Answer(await route.handler(req), banned ? bannedV4 : undefined) })
    const alias = CLIENT_ROUTES[route.name]
    if (alias !== undefined) {
      clients.push({ ...route, ...alias, descr: route.descr.replace(/connections?/g, m => m === 'connection' ? 'client' : 'clients'), handler: async (req) => v4Answer(await route.handler(req), connectedClient) })
    }
  }
  return [...clients, ...others]
}

/** A result with its `data` in v4's names, each item passed through `item` first when given. */
function v4Answer<R> (result: R, item?: (value: Record<string, unknown>) => Record<string, unknown>): R {
  if (result === undefined || result === null || typeof result !== 'object' || !('data' in result)) return result
  const data = (result as { data: unknown }).data
  const each = (v: unknown): unknown => renameFields(item !== undefined && isRecord(v) ? item(v) : v)
  return { ...result, data: Array.isArray(data) ? data.map(each) : each(data) }
}

/** A client in v4's clients resource: a connection, connected (EMQ X 4.4's `connected`). */
function connectedClient (c: Record<string, unknown>): Record<string, unknown> {
  return { ...c, connected: true }
}

/** A banned entry with EMQ X 4.4's `as` values. */
function bannedV4 (b: Record<string, unknown>): Record<string, unknown> {
  const as = typeof b.as === 'string' ? V4_BANNED_AS[b.as] ?? b.as : b.as
  return { ...b, as }
}

/** `value` with every object key of {@link V4_FIELDS} renamed, at any depth. */
export function renameFields (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(renameFields)
  if (!isRecord(value)) return value
  const out: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(value)) out[V4_FIELDS[key] ?? key] = renameFields(v)
  return out
}

/**
 * How `route` reads a v4 request body: with v3's names ({@link v3Body}) when v3's body has a
 * `client_id`; unchanged otherwise (`/auth_clientid` takes `clientid` in v3 already).
 */
export function v3BodyFor (route: RouteDef): (body: unknown) => unknown {
  return JSON.stringify(route.body ?? {}).includes('"client_id"') ? v3Body : (body) => body
}

/**
 * A v4 request body read with v3's names: `clientid` as `client_id` (top level, and in each
 * item of a batch), unless the body gives `client_id` itself.
 */
export function v3Body (body: unknown): unknown {
  if (Array.isArray(body)) return body.map(v3Body)
  if (!isRecord(body) || !('clientid' in body) || 'client_id' in body) return body
  const { clientid, ...rest } = body
  return { ...rest, client_id: clientid }
}

function isRecord (v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
