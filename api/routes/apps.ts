/**
 * `/api/v3/apps/` (EMQ X 3.4's emqx_mgmt_api_apps): the API applications whose HTTP Basic
 * credentials call this API. Thin: the work and the codes are the applications service's
 * (node/apps/apps.ts), the one `starling-ctl mgmt` uses too. A secret is answered once, by
 * `POST /apps/`; lists and lookups never carry it (EMQ X's lookup did: docs/api.md).
 */
import { defineRoutes, type JsonSchema, type RouteDef } from '../route-table.js'
import { WrongTypeError } from '../../node/errors.js'

/** The fields EMQ X 3.4's `update_app` changed. */
const CHANGES: Record<string, JsonSchema> = {
  name: { type: 'string', description: 'display name' },
  desc: { type: 'string', description: 'description' },
  status: { type: 'boolean', description: 'false: the application cannot authenticate' },
  expired: { type: ['integer', 'null'], description: 'expiry, seconds since the epoch; null for never' }
}

const ADD_BODY: JsonSchema = {
  type: 'object',
  properties: {
    app_id: { type: 'string', description: 'the HTTP Basic user name; no ":"' },
    secret: { type: 'string', description: 'the HTTP Basic password; generated when left out, answered once' },
    ...CHANGES
  },
  required: ['app_id']
}

const UPDATE_BODY: JsonSchema = { type: 'object', properties: CHANGES }

/** The API application endpoints. */
export const APP_ROUTES: RouteDef[] = defineRoutes([
  {
    name: 'list_apps',
    method: 'GET',
    path: '/apps/',
    descr: 'List Applications (without their secrets)',
    handler: (req) => ({ data: req.node.services.apps.list() })
  },
  {
    name: 'lookup_app',
    method: 'GET',
    path: '/apps/:appid',
    descr: 'Lookup Application (without its secret)',
    handler: (req) => ({ data: req.node.services.apps.get(req.params.appid) })
  },
  {
    name: 'add_app',
    method: 'POST',
    path: '/apps/',
    descr: 'Add Application; the answer is the only one that shows its secret',
    body: ADD_BODY,
    handler: async (req) => ({ data: await req.node.services.apps.add(req.body) })
  },
  {
    name: 'update_app',
    method: 'PUT',
    path: '/apps/:appid',
    descr: 'Update Application (name, desc, status, expired)',
    body: UPDATE_BODY,
    handler: async (req) => {
      if (Object.hasOwn(req.body, 'secret') || Object.hasOwn(req.body, 'app_id')) {
        throw new WrongTypeError('an application\'s app_id and secret cannot be changed: delete it and add it again')
      }
      return { data: await req.node.services.apps.update(req.params.appid, req.body) }
    }
  },
  {
    name: 'del_app',
    method: 'DELETE',
    path: '/apps/:appid',
    descr: 'Delete Application (not the default one)',
    handler: async (req) => { await req.node.services.apps.delete(req.params.appid); return undefined }
  }
])
