import { VERSION } from '../node/version.js'
import { fullPath, type RouteDef } from './route-table.js'

const ENVELOPE = {
  type: 'object',
  properties: {
    code: { type: 'integer', description: '0 on success, otherwise an error code (docs/api.md)' },
    data: { description: 'the result, for reads' },
    meta: {
      type: 'object',
      properties: {
        page: { type: 'integer' },
        limit: { type: 'integer' },
        count: { type: 'integer' },
        failed: {
          type: 'array',
          description: 'cluster-wide answers: the nodes that failed or did not answer (their items are missing from data)',
          items: {
            type: 'object',
            properties: { node: { type: 'string' }, code: { type: 'integer', description: '101 (badrpc) for a node that did not answer' }, message: { type: 'string' } },
            required: ['node', 'code', 'message']
          }
        }
      }
    },
    message: { type: 'string', description: 'what went wrong, on errors' }
  },
  required: ['code']
}

/** Converts `/connections/:clientid` to OpenAPI's `/connections/{clientid}`. */
function openApiPath (route: RouteDef): string {
  return fullPath(route).replace(/:([A-Za-z_]+)/g, '{$1}')
}

/**
 * What a listener serves under `/api/v3/` outside the route table, for its OpenAPI document:
 * the dashboard's sign-in and sign-out (plugins/dashboard/app.ts), which run before the
 * authentication step and set the session cookie, so they cannot be routes of the table.
 * The listener that serves them says so beside them (plugins/dashboard/openapi.ts).
 */
export interface OpenApiAddition {
  /** OpenAPI path items by full path (`/api/v3/auth`), added to those of the routes. */
  paths: Record<string, Record<string, unknown>>
  /** Security schemes the listener accepts besides HTTP Basic (the dashboard's session cookie and bearer token). */
  securitySchemes: Record<string, unknown>
}

/**
 * The OpenAPI 3 document of the management API, generated from the route table that serves
 * the requests (so it cannot drift from them), with a listener's `addition` when it has one.
 */
export function openApiDocument (routes: RouteDef[], addition?: OpenApiAddition): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const route of routes) {
    const params = [...fullPath(route).matchAll(/:([A-Za-z_]+)/g)].map(m => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }))
    if (route.paginated === true) {
      params.push({ name: '_page', in: 'query', required: false, schema: { type: 'integer' } } as any)
      params.push({ name: '_limit', in: 'query', required: false, schema: { type: 'integer' } } as any)
    }
    const operation: Record<string, unknown> = {
      operationId: route.name,
      summary: route.descr,
      parameters: params,
      responses: {
        200: { description: 'success: `{code: 0, data?, meta?}`', content: { 'application/json': { schema: ENVELOPE } } },
        default: { description: 'error: `{code, message}`', content: { 'application/json': { schema: ENVELOPE } } }
      }
    }
    if (route.body !== undefined) operation.requestBody = { required: true, content: { 'application/json': { schema: route.body } } }
    ;(paths[openApiPath(route)] ??= {})[route.method.toLowerCase()] = operation
  }
  for (const [path, item] of Object.entries(addition?.paths ?? {})) Object.assign(paths[path] ??= {}, item)
  const schemes = { basic: { type: 'http', scheme: 'basic' }, ...addition?.securitySchemes }
  return {
    openapi: '3.0.3',
    info: { title: 'Starling management API', version: VERSION, description: 'EMQ X-compatible management API under /api/v3/' },
    components: { securitySchemes: schemes },
    // any one of the schemes
    security: Object.keys(schemes).map(name => ({ [name]: [] })),
    paths
  }
}
