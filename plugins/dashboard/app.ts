/**
 * The dashboard listener's HTTP application: security headers on every answer, the Origin
 * check of every write, sign-in (`POST /api/v3/auth`) and sign-out (`POST /api/v3/logout`),
 * then the whole `/api/v3/` (the management API's routes and the dashboard's own, routes.ts)
 * behind the dashboard's authentication (auth.ts). The only answers given without a signed-in
 * user are sign-in, the browser app's files and the error envelope.
 *
 * The browser app (`dashboard/`, built by Vite into `dist/dashboard/`) is served from `/`
 * without sign-in (static.ts), before the API.
 */
import express, { type NextFunction, type Request, type Response } from 'express'
import { ApiError, BodyTooLargeError, NotJsonError, toApiError } from '../../node/errors.js'
import type { Logger } from '../../node/logger.js'
import { DashboardCrossSiteError, DashboardSlowDownError } from './errors.js'
import { checkPassword, isSafeMethod, sessionCookie, type DashboardAuthComponents } from './auth.js'
import type { ApiAuthenticator } from '../../api/server.js'
import { staticFiles } from './static.js'

/** Largest sign-in body read. */
const MAX_SIGN_IN_BYTES = 16 * 1024

/**
 * Headers of every answer: no script, style or frame from elsewhere, never framed, no MIME
 * sniffing, no referrer leaving the page, nothing of the API cached.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin'
}

/** What the application is given. */
export interface DashboardAppComponents {
  auth: DashboardAuthComponents
  /** The dashboard's authentication step (auth.ts `dashboardAuthenticator`), shared with the API application. */
  authenticate: ApiAuthenticator
  /** `/api/v3/` behind `authenticate` (`parts.api.app`). */
  api: express.Express
  logger: Logger
}

function answerError (res: Response, e: ApiError): void {
  res.status(e.status).json({ code: e.code, message: e.message })
}

/**
 * Refuses a write that a browser sent from another site: its `Origin` (sent by browsers with
 * every cross-origin and every fetch POST) is not this listener's own, or `Sec-Fetch-Site`
 * says cross-site. A request with neither (curl, scripts) passes.
 */
function originCheck (req: Request, res: Response, next: NextFunction): void {
  if (isSafeMethod(req.method)) return next()
  const origin = req.headers.origin
  const scheme = (req.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http'
  if (origin !== undefined && origin !== `${scheme}://${req.headers.host ?? ''}`) {
    return answerError(res, new DashboardCrossSiteError(`Origin ${origin} is not this listener (${scheme}://${req.headers.host ?? ''})`))
  }
  if (req.headers['sec-fetch-site'] === 'cross-site') return answerError(res, new DashboardCrossSiteError('Sec-Fetch-Site is cross-site'))
  next()
}

/** The JSON body of a small request, or 109. */
function jsonBody (req: Request): Record<string, unknown> {
  const raw = req.body
  if (!Buffer.isBuffer(raw) || raw.length === 0) throw new NotJsonError('request body is empty; send {"username": ..., "password": ...}')
  let body: unknown
  try {
    body = JSON.parse(raw.toString('utf8'))
  } catch {
    // the parser's message may quote the body, which holds a password: never echo it
    throw new NotJsonError('request body is not JSON')
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new NotJsonError('request body must be a JSON object {"username": ..., "password": ...}')
  return body as Record<string, unknown>
}

/** The dashboard listener's application. */
export function createDashboardApp (c: DashboardAppComponents): express.Express {
  const app = express()
  app.disable('x-powered-by')
  app.use((_req, res, next) => {
    res.set(SECURITY_HEADERS)
    next()
  })
  app.use('/api', (_req, res, next) => {
    res.set('Cache-Control', 'no-store')
    next()
  })
  app.use(originCheck)

  const small = express.raw({ type: () => true, limit: MAX_SIGN_IN_BYTES })
  app.post(['/api/v3/auth', '/api/v4/auth'], small, (req, res, next) => {
    Promise.resolve().then(async () => {
      const body = jsonBody(req)
      const user = await checkPassword(c.auth, req, body.username, body.password)
      const session = await c.auth.sessions.issue(user.username, user.generation)
      res.set('Set-Cookie', sessionCookie(req, session))
      res.json({
        code: 0,
        data: { username: user.username, tags: user.tags, token: session.token, expires_at: session.expiresAt, must_change_password: user.mustChange }
      })
    }).catch(next)
  })
  app.post(['/api/v3/logout', '/api/v4/logout'], (req, res, next) => {
    Promise.resolve().then(async () => {
      const username = await c.authenticate(req, res)
      await c.auth.users.revoke(username)
      res.set('Set-Cookie', sessionCookie(req, null))
      res.json({ code: 0 })
    }).catch(next)
  })
  // who is signed in (the web pages ask at start: the cookie is HttpOnly); null when nobody
  // is, answered 200 so that a first visit logs no failed request in the browser
  app.get(['/api/v3/auth', '/api/v4/auth'], (req, res, next) => {
    Promise.resolve().then(async () => {
      let username: string
      try {
        username = await c.authenticate(req, res)
      } catch (e) {
        if (!(e instanceof ApiError) || e.status !== 401) throw e
        res.removeHeader('WWW-Authenticate')
        return res.json({ code: 0, data: null })
      }
      res.json({ code: 0, data: c.auth.users.whoami(username) ?? null })
    }).catch(next)
  })
  app.use(staticFiles())
  app.use(c.api)
  app.use((err: any, _req: Request, res: Response, _next: NextFunction) => {
    if (err?.type === 'entity.too.large') return answerError(res, new BodyTooLargeError(MAX_SIGN_IN_BYTES))
    if (err instanceof DashboardSlowDownError) res.set('Retry-After', String(err.retryAfter))
    // body-parser's own 4xx (an unreadable body) is the request's fault: 109
    const e = !(err instanceof ApiError) && typeof err?.status === 'number' && err.status < 500
      ? new NotJsonError('request body cannot be read')
      : toApiError(err)
    if (e.status >= 500) c.logger.warn({ err: { message: e.message } }, 'dashboard error')
    answerError(res, e)
  })
  return app
}
