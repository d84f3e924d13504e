/**
 * What the dashboard listener serves under `/api/v3/` outside the route table (app.ts):
 * sign-in (`POST /auth`), who is signed in (`GET /auth`) and sign-out (`POST /logout`), for
 * the OpenAPI document served there (`GET /api/v3/openapi.json`), beside every route of the
 * tables, and the ways a dashboard user is authenticated. They are not routes of the table
 * because they run before the authentication step and set or clear the session cookie. Keep
 * this beside app.ts: a change to those three handlers changes this too.
 */
import type { OpenApiAddition } from '../../api/openapi.js'
import { SESSION_COOKIE } from './auth.js'

const ENVELOPE_OF = (data: Record<string, unknown>): Record<string, unknown> => ({
  type: 'object',
  properties: { code: { type: 'integer', description: '0 on success' }, data },
  required: ['code']
})

const USER = {
  type: 'object',
  properties: { username: { type: 'string' }, tags: { type: 'string' }, must_change_password: { type: 'boolean' } }
}

const ERROR = { description: 'error: `{code, message}` (docs/dashboard.md)', content: { 'application/json': { schema: { type: 'object', properties: { code: { type: 'integer' }, message: { type: 'string' } } } } } }

/** The dashboard listener's sign-in, who-am-i and sign-out, and its session schemes. */
export const DASHBOARD_OPENAPI: OpenApiAddition = {
  securitySchemes: {
    session: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE, description: 'set by POST /api/v3/auth; writes also need the X-Requested-With header' },
    bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'the token POST /api/v3/auth answers' }
  },
  paths: {
    '/api/v3/auth': {
      post: {
        operationId: 'auth',
        summary: 'Sign in as a dashboard user {username, password}: a session token, also set as the session cookie (103 wrong user name or password, 104 empty)',
        security: [],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { type: 'object', properties: { username: { type: 'string' }, password: { type: 'string' } }, required: ['username', 'password'] } } }
        },
        responses: {
          200: {
            description: 'signed in',
            content: {
              'application/json': {
                schema: ENVELOPE_OF({
                  type: 'object',
                  properties: { ...USER.properties, token: { type: 'string' }, expires_at: { type: 'integer', description: 'seconds since the epoch' } }
                })
              }
            }
          },
          default: ERROR
        }
      },
      get: {
        operationId: 'whoami',
        summary: 'The signed-in dashboard user {username, tags, must_change_password}, or null when nobody is signed in (answered 200 either way)',
        security: [],
        responses: { 200: { description: 'the user or null', content: { 'application/json': { schema: ENVELOPE_OF({ ...USER, nullable: true }) } } }, default: ERROR }
      }
    },
    '/api/v3/logout': {
      post: {
        operationId: 'logout',
        summary: 'Sign out: ends every session of the signed-in user on every node and clears the cookie (104 when not signed in)',
        responses: { 200: { description: '`{code: 0}`', content: { 'application/json': { schema: ENVELOPE_OF({}) } } }, default: ERROR }
      }
    }
  }
}
