/**
 * The dashboard's own `/api/v3/` endpoints (EMQ X 4's emqx_dashboard API, emqx-names.md
 * section 8): its users and password change. They are a route table of their own, served on
 * the dashboard listener only, after the management API's routes and behind the same
 * sign-in (app.ts); `GET /api/v3/` there lists them with the rest. Sign-in and sign-out
 * (`POST /auth`, `POST /logout`) are not here: they set and clear the session cookie (app.ts).
 */
import { defineRoutes, type RouteDef } from '../../api/route-table.js'
import type { DashboardUsers } from './users.js'

/** A body of text fields, none required: an empty or missing one is the spec's 104, from the users service. */
function textFields (...names: string[]): Record<string, unknown> {
  return { type: 'object', properties: Object.fromEntries(names.map(n => [n, { type: 'string' }])) }
}

/** The routes over `users`. */
export function dashboardRoutes (users: DashboardUsers): RouteDef[] {
  return defineRoutes([
    {
      name: 'list_users',
      method: 'GET',
      path: '/users',
      descr: 'List the dashboard users, [{username, tags}]',
      handler: () => ({ data: users.list() })
    },
    {
      name: 'create_user',
      method: 'POST',
      path: '/users',
      descr: 'Add a dashboard user {username, password, tags}',
      body: textFields('username', 'password', 'tags'),
      handler: async (req) => { await users.add(req.body.username, req.body.password, req.body.tags); return undefined }
    },
    {
      name: 'update_user',
      method: 'PUT',
      path: '/users/:name',
      descr: 'Change the tags of a dashboard user {tags}',
      body: textFields('tags'),
      handler: async (req) => { await users.update(req.params.name, req.body.tags); return undefined }
    },
    {
      name: 'delete_user',
      method: 'DELETE',
      path: '/users/:name',
      descr: 'Delete a dashboard user (not the default one)',
      handler: async (req) => { await users.delete(req.params.name); return undefined }
    },
    {
      name: 'change_pwd',
      method: 'PUT',
      path: '/change_pwd/:username',
      descr: 'Change a dashboard user\'s password {old_pwd, new_pwd}; ends that user\'s sessions',
      body: textFields('old_pwd', 'new_pwd'),
      handler: async (req) => { await users.changePassword(req.params.username, req.body.old_pwd, req.body.new_pwd); return undefined }
    }
  ])
}
