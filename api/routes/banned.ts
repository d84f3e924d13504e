/**
 * `/api/v3/banned/` (spec: Banned entry, Endpoints/Banned list): list (paginated), create,
 * and `DELETE /banned/:who?as=<as>`. Thin: the entry rules are the banned service's
 * (docs/banned.md); node/ops/banned-ops.ts runs them.
 */
import { defineRoutes, type RouteDef } from '../route-table.js'
import { paginate, pageOf } from '../pagination.js'
import { addBanned, deleteBanned, listBanned } from '../../node/ops/banned-ops.js'

const BANNED_BODY = {
  type: 'object',
  properties: {
    who: { type: 'string', description: 'the client id, username or IP address' },
    as: { type: 'string', description: 'client_id, username or ip_address' },
    reason: { type: 'string', description: 'default empty' },
    desc: { type: 'string', description: 'default empty' },
    until: { type: ['integer', 'string'], description: 'end of the ban, seconds since the epoch; default now + 300' }
  },
  required: ['who', 'as']
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
    handler: async (req) => ({ data: await addBanned(req.node, req.body) })
  },
  {
    name: 'delete_banned',
    method: 'DELETE',
    path: '/banned/:who',
    descr: 'Delete banned (?as=client_id|username|ip_address)',
    handler: async (req) => { await deleteBanned(req.node, req.params.who, req.query.as); return undefined }
  }
])
