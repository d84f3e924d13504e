/**
 * The route table of `/api/v3/`: one declarative entry per endpoint drives the handlers, the
 * index, the OpenAPI document and body validation. A handler gets the request and the
 * components it may use ({@link ApiRequest}), never the whole node: the API part
 * (api/plugin.ts) builds those once per node when it starts the server.
 */
import type { StarlingNode } from '../node/node.js'
import type { ClusterList, FailedNode } from '../node/rpc.js'
import type { RuleOpsComponents } from '../rules/rule-ops.js'

/** A JSON schema (the subset Ajv and OpenAPI 3 share). */
export type JsonSchema = Record<string, unknown>

/**
 * What the handlers use of the node they run on: its name, its settings (topic checks), its
 * RPC (every per-node and cluster-wide operation) and its services (the API applications).
 * Anything else a handler needs is an operation on the RPC, not a field of the node.
 */
export type ApiNode = Pick<StarlingNode, 'name' | 'config' | 'rpc' | 'services'>

/** What a handler gets: the parsed request and the components it may use. */
export interface ApiRequest {
  /** Path parameters (`:clientid` ...), URL-decoded. */
  params: Record<string, string>
  /** Query string values. */
  query: Record<string, string | undefined>
  /** The JSON body, validated against the route's `body` schema. */
  body: any
  node: ApiNode
  /** The node's rule engine with its RPC and name: what rules/rule-ops.ts and schemas/schema-ops.ts take. */
  rules: RuleOpsComponents
  /**
   * Who made the request: the API application (its HTTP Basic user name) on the management
   * listener, the signed-in dashboard user on the dashboard's (svc_dashboard).
   */
  appId: string
}

/**
 * What a handler returns: nothing (`{code: 0}`), or data with optional pagination meta and,
 * for a cluster-wide answer, the nodes that failed their part. The server puts `failed`
 * (when not empty) into the envelope's `meta.failed`; `data` is sent as it is.
 */
export type ApiResult = undefined | { data: unknown, meta?: { page: number, limit: number, count: number }, failed?: FailedNode[] }

/** A handler's result from a cluster-wide list: its items as `data`, with the failed nodes. */
export function clusterResult<T> (list: ClusterList<T>): { data: T[], failed: FailedNode[] } {
  return { data: list.items, failed: list.failed }
}

/**
 * One endpoint. The same table serves the requests, lists the endpoints at `GET /api/v3/`,
 * generates `/api/v3/openapi.json`, and validates request bodies.
 */
export interface RouteDef {
  /** Stable name, as EMQ X's index lists it (e.g. `list_connections`). */
  name: string
  method: 'GET' | 'POST' | 'PUT' | 'DELETE'
  /** Path under `/api/v3`, Express syntax: `/connections/:clientid`. */
  path: string
  descr: string
  /** Accepts `_page` / `_limit` (pagination meta in the answer). */
  paginated?: boolean
  /** Schema of the JSON body; a body that does not match is refused with 107/108. */
  body?: JsonSchema
  /**
   * Error code for a body that fails a rule other than required/type, by the field's JSON
   * pointer (e.g. `{ '/qos': 116, '/topic': 115 }`). Default 108.
   */
  fieldCodes?: Record<string, number>
  handler: (req: ApiRequest) => Promise<ApiResult> | ApiResult
}

/** Type-checks a list of routes. */
export function defineRoutes (routes: RouteDef[]): RouteDef[] {
  return routes
}

/** The path in the index's and EMQ X's form: `/api/v3/connections/:clientid`. */
export function fullPath (route: RouteDef): string {
  return '/api/v3' + route.path
}

/**
 * The routes one API part serves: the core's (api/routes/index.ts `API_ROUTES`), then those
 * plugins add through `parts.api` (plugins/kit/parts.ts), in the order added. The server
 * reads it per request, so a route added or removed while the API runs is served or gone at
 * once, and the index and the OpenAPI document list exactly what is served.
 */
export interface ApiRouteTable {
  /** Adds routes; returns the function that removes them. Throws when a method and path is served already. */
  add (routes: readonly RouteDef[]): () => void
  /** Every route now, in the index's order. */
  all (): readonly RouteDef[]
  /** Changes with every add and removal. */
  readonly version: number
}

/** A route table serving `base` and whatever is added. */
export function createRouteTable (base: readonly RouteDef[]): ApiRouteTable {
  let routes: readonly RouteDef[] = [...base]
  let version = 0
  const key = (r: RouteDef): string => `${r.method} ${r.path}`
  return {
    add (added) {
      const served = new Set(routes.map(key))
      for (const r of added) {
        if (served.has(key(r))) throw new Error(`the API serves ${key(r)} already`)
        served.add(key(r))
      }
      routes = [...routes, ...added]
      version++
      let removed = false
      return () => {
        if (removed) return
        removed = true
        routes = routes.filter(r => !added.includes(r))
        version++
      }
    },
    all: () => routes,
    get version () { return version }
  }
}

/**
 * One view of several route tables, in the order given: what a listener serving more than one
 * table reads (the dashboard serves the API's table and its own). Its version changes whenever
 * one of theirs does (each only grows, so their sum does too).
 */
export function joinRouteTables (...tables: ReadonlyArray<Pick<ApiRouteTable, 'all' | 'version'>>): Pick<ApiRouteTable, 'all' | 'version'> {
  return {
    all: () => tables.flatMap(t => t.all()),
    get version () { return tables.reduce((sum, t) => sum + t.version, 0) }
  }
}
