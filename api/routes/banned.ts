/**
 * `/api/v3/banned/` (spec: Banned entry, Endpoints/Banned list): list (paginated), create,
 * and `DELETE /banned/:who?as=<as>` (or, as EMQ X 3.4's scripts send it, `{"as": ...}` in the
 * body). Thin: the entry rules are the banned service's (docs/banned.md); node/ops/banned-ops.ts
 * runs them. An entry's `by` is the request's `by`, else the API application that made it.
 */
import { defineRoutes, type ApiRequest, type RouteDef } from '../route-table.js'
import { WrongTypeError } from '../../node/errors.js'
import { paginate, pageOf } from '../pagination.js'
import { addBanned, deleteBanned, listBanned } from '../../node/ops/banned-ops.js'

const BANNED_BODY = {
  type: 'object',
  properties: {
    who: { type: 'string', description: 'the client id, username or IP address' },
    as: { type: 'string', description: 'client_id, username or ip_address' },
    reason: { type: 'string', description: 'default empty' },
    desc: { type: 'string', description: 'default empty' },
    by: { type: 'string', description: 'who bans; default the API application id of the request' },
    until: { type: ['integer', 'string'], description: 'end of the ban, seconds since the epoch; default now + 300' }
  },
  required: ['who', 'as']
}

/**
 * `as` of a delete: the query's `?as=`, or the JSON body's `as` (EMQ X 3.4 read the request's
 * parameters, which its scripts sent in the body). Both given and different is 108.
 */
function deleteAs (req: ApiRequest): unknown {
  const body: unknown = req.body
  if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) {
    throw new WrongTypeError('the body of a banned delete must be an object such as {"as": "client_id"}')
  }
  const fromBody = (body as Record<string, unknown> | undefined)?.as
  const fromQuery = req.query.as
  if (fromQuery !== undefined && fromBody !== undefined && fromQuery !== fromBody) {
    throw new WrongTypeError(`"as" given twice with different values (${JSON.stringify(fromQuery)} in the query, ${JSON.stringify(fromBody)} in the body)`)
  }
  return fromQuery ?? fromBody
}

/** The banned-list endpoints. */
export const BANNED_ROUTES: RouteDef[] = defineRoutes([
  {
    name: 'list_banned',
    method: 'GET',
    path: '/banned/',
    paginated: true,
    descr: 'List banned',
    handler: async (req) => {
      pageOf(req.query)
      return paginate(await listBanned(req.node), req.query)
    }
  },
  {
    name: 'create_banned',
    method: 'POST',
    path: '/banned/',
    descr: 'Create banned',
    body: BANNED_BODY,
    handler: async (req) => ({ data: await addBanned(req.node, { ...req.body, by: req.body.by ?? req.appId }) })
  },
  {
    name: 'delete_banned',
    method: 'DELETE',
    path: '/banned/:who',
    descr: 'Delete banned (?as=client_id|username|ip_address, or {"as": ...} in the body)',
    handler: async (req) => { await deleteBanned(req.node, req.params.who, deleteAs(req)); return undefined }
  }
])
