/**
 * Dashboard sessions: a signed, expiring token (an HS256 JWT) issued at sign-in, sent back as
 * an HttpOnly SameSite=Strict cookie or as `Authorization: Bearer <token>`.
 *
 * Invariants:
 * - Signing keys live in the node's shared data (table {@link SIGNING_KEYS_TABLE}, cluster-
 *   wide), one per node, keyed by the node's name and written once, by that node, when it
 *   first attaches svc_dashboard. No two nodes ever write the same key, so replication never
 *   replaces a key (last writer wins would otherwise end every token the loser signed). A
 *   token names its key in its header (`kid`): any node holding the replicated table accepts
 *   a token another node signed, so a load balancer may send a signed-in browser anywhere.
 * - A token carries the user's `generation` (users.ts) at issue; it is accepted only while the
 *   user exists with that same generation. Sign-out and password changes bump it: every
 *   earlier token of that user ends, on every node once replicated.
 * - Tokens expire after {@link SESSION_TTL_SECONDS}; nothing renews them (sign in again).
 */
import { randomBytes } from 'node:crypto'
import type { StoreTable } from '../../node/store/index.js'
import type { DashboardUsers, UserTables } from './users.js'

/** The shared table of the signing keys, by node name. */
export const SIGNING_KEYS_TABLE = 'dashboard_signing_keys'

/** How long a session token is accepted: one hour (EMQ X 5's `dashboard.token_expired_time` default). */
export const SESSION_TTL_SECONDS = 3600

/** Issuer and audience of the tokens: a token of another service is not a dashboard session. */
const ISSUER = 'starling:svc_dashboard'

/** A signing key as stored: 32 random bytes, base64url. */
interface StoredKey { secret: string, created: number }

/** A session as issued. */
export interface IssuedSession {
  token: string
  /** Expiry, seconds since the epoch. */
  expiresAt: number
}

/** The dashboard's sessions on one node. */
export interface DashboardSessions {
  /** Creates this node's signing key when it has none (once per node, ever). */
  ensureKey: () => Promise<void>
  /** A token for `username` at its current `generation`. */
  issue: (username: string, generation: number) => Promise<IssuedSession>
  /** The user name of a live session token, or undefined (bad signature, unknown key, expired, revoked, user gone). */
  verify: (token: string) => Promise<string | undefined>
}

/** Sessions signed with this node's key (`nodeName`) and checked against every node's, over `users`. */
export function createDashboardSessions (tables: UserTables, nodeName: string, users: Pick<DashboardUsers, 'generation'>): DashboardSessions {
  const keys: StoreTable<StoredKey> = tables.table(SIGNING_KEYS_TABLE)
  const keyOf = (kid: string): Uint8Array | undefined => {
    const stored = kid === '' ? undefined : keys.get(kid)
    return stored === undefined ? undefined : Buffer.from(stored.secret, 'base64url')
  }
  return {
    async ensureKey () {
      if (keys.has(nodeName)) return
      await keys.put(nodeName, { secret: randomBytes(32).toString('base64url'), created: Date.now() })
    },
    async issue (username, generation) {
      const key = keyOf(nodeName)
      if (key === undefined) throw new Error('svc_dashboard: this node has no signing key (ensureKey was not called)')
      const now = Math.floor(Date.now() / 1000)
      const expiresAt = now + SESSION_TTL_SECONDS
      const { SignJWT } = await import('jose')
      const token = await new SignJWT({ gen: generation })
        .setProtectedHeader({ alg: 'HS256', kid: nodeName, typ: 'JWT' })
        .setSubject(username)
        .setIssuer(ISSUER)
        .setAudience(ISSUER)
        .setIssuedAt(now)
        .setExpirationTime(expiresAt)
        .sign(key)
      return { token, expiresAt }
    },
    async verify (token) {
      // jose loads with the first sign-in or signed request (an idle node has none)
      const { decodeProtectedHeader, jwtVerify } = await import('jose')
      let kid: string
      try {
        const header = decodeProtectedHeader(token)
        if (typeof header.kid !== 'string') return undefined
        kid = header.kid
      } catch {
        return undefined
      }
      const key = keyOf(kid)
      if (key === undefined) return undefined
      try {
        const { payload } = await jwtVerify(token, key, { algorithms: ['HS256'], issuer: ISSUER, audience: ISSUER })
        const username = payload.sub
        if (typeof username !== 'string' || typeof payload.gen !== 'number') return undefined
        return users.generation(username) === payload.gen ? username : undefined
      } catch {
        return undefined
      }
    }
  }
}
