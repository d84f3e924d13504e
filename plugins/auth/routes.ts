/**
 * `/api/v3/auth_clientid` and `/api/v3/auth_username` (spec: Index, the index-only endpoints;
 * shapes of EMQ X 4's emqx_auth_clientid / emqx_auth_username APIs): list the ids, add one
 * with its password, show one, change its password, delete it. Thin: plugins/auth/ops.ts.
 * Choices (hash shown, codes 104/105/113) are in docs/api.md.
 */
import { defineRoutes, type RouteDef } from '../../api/route-table.js'
import { paginate, pageOf } from '../../api/pagination.js'
import {
  addCredential, deleteCredential, listCredentials, lookupCredential, updateCredential, type CredentialTable
} from './ops.js'

/** The five endpoints of one table; `field` is its id (`clientid` or `username`), `what` its name in descr. */
function credentialRoutes (table: CredentialTable, field: 'clientid' | 'username', names: [string, string, string, string, string], what: string): RouteDef[] {
  return defineRoutes([
    {
      name: names[0],
      method: 'GET',
      path: `/${table}`,
      paginated: true,
      descr: `List all ${what}s`,
      handler: async (req) => {
        pageOf(req.query)
        return paginate(await listCredentials(req.node, table), req.query)
      }
    },
    {
      name: names[1],
      method: 'POST',
      path: `/${table}`,
      descr: `Add a ${what} with its password`,
      body: {
        type: 'object',
        properties: { [field]: { type: 'string' }, password: { type: 'string' } },
        required: [field, 'password']
      },
      handler: async (req) => { await addCredential(req.node, table, req.body[field], req.body.password); return undefined }
    },
    {
      name: names[2],
      method: 'GET',
      path: `/${table}/:${field}`,
      descr: `Lookup a ${what} (the stored password hash)`,
      handler: async (req) => ({ data: await lookupCredential(req.node, table, req.params[field]) })
    },
    {
      name: names[3],
      method: 'PUT',
      path: `/${table}/:${field}`,
      descr: `Update the password of a ${what}`,
      body: { type: 'object', properties: { password: { type: 'string' } }, required: ['password'] },
      handler: async (req) => { await updateCredential(req.node, table, req.params[field], req.body.password); return undefined }
    },
    {
      name: names[4],
      method: 'DELETE',
      path: `/${table}/:${field}`,
      descr: `Delete a ${what}`,
      handler: async (req) => { await deleteCredential(req.node, table, req.params[field]); return undefined }
    }
  ])
}

/** The auth_clientid endpoints (svc_auth_clientid adds them). */
export const AUTH_CLIENTID_ROUTES: RouteDef[] = credentialRoutes('auth_clientid', 'clientid', ['list_clientid', 'add_clientid', 'lookup_clientid', 'update_clientid', 'delete_clientid'], 'client id')
/** The auth_username endpoints (svc_auth_username adds them). */
export const AUTH_USERNAME_ROUTES: RouteDef[] = credentialRoutes('auth_username', 'username', ['list_username', 'add_username', 'lookup_username', 'update_username', 'delete_username'], 'username')
/** The auth_clientid and auth_username endpoints. */
export const AUTH_ROUTES: RouteDef[] = [...AUTH_CLIENTID_ROUTES, ...AUTH_USERNAME_ROUTES]
