/**
 * Who is signed in on the dashboard listener, and the sign-in and sign-out endpoints.
 *
 * A request is signed in by, in this order: `Authorization: Bearer <token>` (a session
 * token), `Authorization: Basic` with a dashboard user's name and password (as EMQ X's
 * dashboard API took, so scripts written for it keep working), or the session cookie
 * {@link SESSION_COOKIE} set by `POST /api/v3/auth`. A cookie-authenticated write must carry
 * `X-Requested-With` (CSRF: a browser sends no custom header cross-site without a CORS
 * preflight, which this listener never allows); Origin is checked for every write (app.ts).
 *
 * Wrong passwords are slowed down per user name and per client address (backoff.ts). A
 * Basic request whose credentials were verified within {@link BASIC_CACHE_MS} is not hashed
 * again (bcrypt costs tens of milliseconds per request): the cache holds a SHA-256 of name and
 * password with the user's password fingerprint, so a changed password or a sign-out (which
 * changes the fingerprint) is not served from it.
 */
import { createHash } from 'node:crypto'
import type { Request, Response } from 'express'
import type { ApiAuthenticator } from '../../api/server.js'
import type { LoginBackoff } from './backoff.js'
import type { DashboardSessions, IssuedSession } from './sessions.js'
import type { DashboardUsers, VerifiedUser } from './users.js'
import {
  DashboardCrossSiteError, DashboardEmptyCredentialsError, DashboardSignInRequiredError, DashboardSlowDownError, DashboardWrongCredentialsError
} from './errors.js'

/** The session cookie's name. */
export const SESSION_COOKIE = 'starling_dashboard_session'

/** The header a cookie-authenticated write must carry (any non-empty value). */
export const CSRF_HEADER = 'x-requested-with'

/** How long verified HTTP Basic credentials are trusted without hashing again. */
export const BASIC_CACHE_MS = 60_000
/** Entries of that cache at most. */
const BASIC_CACHE_MAX = 1000

/** What sign-in and the authenticator use. */
export interface DashboardAuthComponents {
  users: DashboardUsers & { fingerprint: (username: string) => string | undefined }
  sessions: DashboardSessions
  backoff: LoginBackoff
}

/** Methods that change nothing, exempt from the CSRF header. */
export function isSafeMethod (method: string): boolean {
  return method === 'GET' || method === 'HEAD' || method === 'OPTIONS'
}

/** The value of cookie `name` in the request's `Cookie` header. */
function readCookie (req: Request, name: string): string | undefined {
  const header = req.headers.cookie
  if (header === undefined) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

/** The cookie that holds `session` (Secure over HTTPS), or the one that clears it. */
export function sessionCookie (req: Request, session: IssuedSession | null): string {
  const secure = (req.socket as { encrypted?: boolean }).encrypted === true ? '; Secure' : ''
  const value = session === null ? '' : session.token
  const maxAge = session === null ? 0 : Math.max(0, session.expiresAt - Math.floor(Date.now() / 1000))
  return `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure}`
}

/** The keys the backoff counts a sign-in under: the user name and the client address. */
function backoffKeys (req: Request, username: string): string[] {
  return [`user:${username}`, `addr:${req.socket.remoteAddress ?? ''}`]
}

/**
 * Checks a user name and password, slowed down after wrong ones: the user, or 103 (the same
 * for an unknown user as for a wrong password; HTTP 429 when held back too long), 104 when
 * either is empty.
 */
export async function checkPassword (auth: DashboardAuthComponents, req: Request, username: unknown, password: unknown): Promise<VerifiedUser> {
  if (typeof username !== 'string' || username === '') throw new DashboardEmptyCredentialsError('username')
  if (typeof password !== 'string' || password === '') throw new DashboardEmptyCredentialsError('password')
  const keys = backoffKeys(req, username)
  const retryAfter = await auth.backoff.admit(keys)
  if (retryAfter > 0) throw new DashboardSlowDownError(retryAfter)
  const user = await auth.users.verify(username, password)
  if (user === undefined) {
    auth.backoff.failed(keys)
    throw new DashboardWrongCredentialsError()
  }
  auth.backoff.succeeded(keys)
  return user
}

/** User name and password of a Basic header (split at the first `:`), or undefined when it cannot be read. */
function parseBasic (header: string): { username: string, password: string } | undefined {
  const decoded = Buffer.from(header.replace(/^Basic\s+/i, ''), 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon < 0) return undefined
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) }
}

/** The authentication step of the dashboard listener's `/api/v3/` (see the module comment). */
export function dashboardAuthenticator (auth: DashboardAuthComponents): ApiAuthenticator {
  const basicCache = new Map<string, { fingerprint: string, until: number }>()
  const refuse = (res: Response, why: string): never => {
    res.set('WWW-Authenticate', 'Bearer realm="Starling dashboard"')
    throw new DashboardSignInRequiredError(why)
  }
  const basic = async (req: Request, res: Response, header: string): Promise<string> => {
    const given = parseBasic(header)
    if (given === undefined || given.username === '' || given.password === '') return refuse(res, 'the HTTP Basic credentials are empty')
    const cacheKey = createHash('sha256').update(given.username).update('\0').update(given.password).digest('hex')
    const cached = basicCache.get(cacheKey)
    if (cached !== undefined && cached.until > Date.now() && cached.fingerprint === auth.users.fingerprint(given.username)) return given.username
    basicCache.delete(cacheKey)
    try {
      await checkPassword(auth, req, given.username, given.password)
    } catch (err) {
      res.set('WWW-Authenticate', 'Bearer realm="Starling dashboard"')
      if (err instanceof DashboardSlowDownError) res.set('Retry-After', String(err.retryAfter))
      throw err
    }
    const fingerprint = auth.users.fingerprint(given.username)
    if (fingerprint !== undefined) {
      if (basicCache.size >= BASIC_CACHE_MAX) basicCache.delete(basicCache.keys().next().value as string)
      basicCache.set(cacheKey, { fingerprint, until: Date.now() + BASIC_CACHE_MS })
    }
    return given.username
  }
  return async (req, res) => {
    const header = req.headers.authorization
    if (header !== undefined && header !== '') {
      if (/^Bearer\s+\S/i.test(header)) {
        const username = await auth.sessions.verify(header.replace(/^Bearer\s+/i, '').trim())
        return username ?? refuse(res, 'the bearer token is not a live session (expired, signed out, or not one of this cluster\'s)')
      }
      if (/^Basic\s+\S/i.test(header)) return await basic(req, res, header)
      return refuse(res, 'the Authorization header is neither Bearer <token> nor Basic')
    }
    const cookie = readCookie(req, SESSION_COOKIE)
    if (cookie !== undefined && cookie !== '') {
      const username = await auth.sessions.verify(cookie)
      if (username === undefined) return refuse(res, 'the session has ended (expired or signed out); POST /api/v3/auth again')
      const csrf = req.headers[CSRF_HEADER]
      if (!isSafeMethod(req.method) && (typeof csrf !== 'string' || csrf === '')) {
        throw new DashboardCrossSiteError(`a write authenticated by the session cookie must carry the ${CSRF_HEADER} header`)
      }
      return username
    }
    return refuse(res, 'no session; POST /api/v3/auth {username, password}, then send its cookie or Authorization: Bearer <token>, or send HTTP Basic credentials of a dashboard user')
  }
}
