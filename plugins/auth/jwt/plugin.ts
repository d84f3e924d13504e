/**
 * `svc_auth_jwt`: authentication by a JSON Web Token in the password (or username) field,
 * and ACL by the token's `acl` claim, as EMQ X 4.4's `emqx_auth_jwt`
 * (docs/auth/svc_auth_jwt.md). Keys: an HMAC secret, an RSA/EC public key file, and/or a
 * JWKS URL refreshed every `auth.jwt.jwks.refresh_interval` (jose's remote key set).
 *
 * | the client sends | verdict |
 * |---|---|
 * | no token in the field, or something that is not a JWS | ignore |
 * | a token with a `kid` the JWKS does not have, or no key of the kind it needs | ignore |
 * | a token whose signature no key verifies, expired (`exp`), not yet valid (`nbf`), issued in the future (`iat`) | deny |
 * | a verified token failing `verify_claims` | deny |
 * | a verified token | allow (its claims kept for the client's ACL checks) |
 * | the JWKS cannot be fetched | ignore, alarm `svc_auth_jwt_unreachable` (cleared only by a later fetch that succeeds) |
 *
 * Which keys: a token with a `kid` header is checked against the JWKS (when one is set);
 * one without, against the secret and the public key (and the JWKS when neither is set).
 */
import { createPublicKey, type KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { ExportedJWKSCache, JSONWebKeySet, JWTPayload, JWTVerifyGetKey } from 'jose'
import { ConfigError, maskUrl, type ConfigSchema } from '../../../node/config/index.js'
import type { AclAction } from '../../../node/acl/acl-matcher.js'
import type { PluginDefinition, PluginInstance } from '../../../node/plugins/types.js'
import {
  decideJwtAcl, defineAuthBackend, type AuthContext, type BackendAuthResult, type BackendClient, type BackendOpenContext, type BackendRequest,
  type BackendVerdict
} from '../backend/index.js'
import { JwtClaimsStore } from './claims-store.js'

/** EMQ X's shipped HMAC secret: a plugin loaded with it accepts tokens anybody can sign. */
export const EMQX_DEFAULT_SECRET = 'emqxsecret'

/** Keys of `etc/plugins/svc_auth_jwt.conf` (EMQ X 4.4's names), beside `auth.jwt.priority` and `auth.jwt.timeout`. */
export const AUTH_JWT_CONFIG_SCHEMA: ConfigSchema = {
  'auth.jwt.secret': {
    type: 'string', default: EMQX_DEFAULT_SECRET, allowEmpty: true, secret: true, live: false,
    doc: 'HMAC secret (HS256, HS384, HS512 tokens), as text; empty: no HMAC key. Change the shipped value: anybody knows it.'
  },
  'auth.jwt.pubkey': {
    type: 'string', default: '', allowEmpty: true, live: false,
    doc: 'PEM file of an RSA or EC public key (or a certificate) for RS*, PS* and ES* tokens; empty: none.'
  },
  'auth.jwt.jwks': {
    type: 'string', default: '', allowEmpty: true, live: false, secretParts: 'url',
    doc: 'URL of a JSON Web Key Set for tokens with a kid header; empty: none.'
  },
  'auth.jwt.jwks.refresh_interval': {
    type: 'duration', default: '5m', min: 1, live: false,
    doc: 'How long fetched JWKS keys are used before the set is fetched again (an unknown kid fetches it at most this often, and at least every 30s).'
  },
  'auth.jwt.from': {
    type: 'enum', values: ['password', 'username'], default: 'password', live: false,
    doc: 'The CONNECT field that carries the token.'
  },
  'auth.jwt.verify_claims': {
    type: 'bool', default: 'off', live: false,
    doc: 'Check the claims of auth.jwt.verify_claims.<claim> (a token without them is denied).'
  },
  'auth.jwt.verify_claims.<name>': {
    type: 'string', live: false,
    doc: 'The value claim <name> must have: text, or %u (the username) or %c (the client id).'
  },
  'auth.jwt.acl_claim_name': {
    type: 'string', default: 'acl', live: false,
    doc: 'The claim holding the client\'s ACL: {"pub": [...], "sub": [...], "all": [...]} topic filters.'
  }
}

/** jose error codes of a token that is there but not valid: the client is denied. */
const INVALID_TOKEN = new Set([
  'ERR_JWS_SIGNATURE_VERIFICATION_FAILED', 'ERR_JWT_EXPIRED', 'ERR_JWT_CLAIM_VALIDATION_FAILED', 'ERR_JWS_INVALID',
  'ERR_JWT_INVALID', 'ERR_JOSE_ALG_NOT_ALLOWED', 'ERR_JOSE_NOT_SUPPORTED', 'ERR_JWKS_MULTIPLE_MATCHING_KEYS'
])

/**
 * jose's JWKS cache object (its `jwksCache` option), which jose writes after each key set it
 * fetched, parsed and applied: counting the writes tells a check whether the JWKS server
 * answered, as against a token verified with keys already held (the cache, the secret).
 */
class JwksFetches {
  /** Key sets fetched and applied since load. */
  count = 0
  jwks: JSONWebKeySet | undefined
  private at: number | undefined
  get uat (): number | undefined { return this.at }
  set uat (at: number | undefined) {
    this.at = at
    this.count++
  }
}

/** What verifying a token found. */
type Checked = { verdict: 'ignore' | 'deny' } | { verdict: 'allow', claims: JWTPayload }

async function openJwt (ctx: BackendOpenContext, store: JwtClaimsStore): Promise<BackendClient> {
  // jose loads with the plugin, not with the node (as the other backends' drivers)
  const { createRemoteJWKSet, decodeProtectedHeader, jwksCache, jwtVerify } = await import('jose')
  const { config, logger } = ctx
  const secret: string = config['auth.jwt.secret'] ?? ''
  const pubkeyPath: string = config['auth.jwt.pubkey'] ?? ''
  const jwksUrl: string = config['auth.jwt.jwks'] ?? ''
  const from: 'password' | 'username' = config['auth.jwt.from']
  const aclClaim: string = config['auth.jwt.acl_claim_name']
  const checks = config['auth.jwt.verify_claims'] === true
    ? Object.entries((config['auth.jwt.verify_claims.<name>'] ?? {}) as Record<string, string>)
    : []

  const staticKeys: Array<Uint8Array | KeyObject> = []
  if (secret !== '') staticKeys.push(new TextEncoder().encode(secret))
  if (secret === EMQX_DEFAULT_SECRET) logger.warn('svc_auth_jwt: auth.jwt.secret is EMQ X\'s shipped value: anybody can sign a token it accepts; set your own (or empty to turn HMAC off)')
  if (pubkeyPath !== '') {
    try {
      staticKeys.push(createPublicKey(readFileSync(ctx.resolvePath(pubkeyPath))))
    } catch (err) {
      throw ConfigError.badValue('auth.jwt.pubkey', pubkeyPath, `a readable PEM public key or certificate (${(err as Error).message})`, 'plugin config')
    }
  }
  let remote: JWTVerifyGetKey | undefined
  const fetches = new JwksFetches()
  /** `fetches.count` when a check last reported the JWKS server as answered. */
  let reportedFetches = 0
  if (jwksUrl !== '') {
    let url: URL
    try {
      url = new URL(jwksUrl)
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)')
    } catch {
      throw ConfigError.badValue('auth.jwt.jwks', maskUrl(jwksUrl), 'an http:// or https:// URL of a JSON Web Key Set', 'plugin config')
    }
    const refreshMs: number = config['auth.jwt.jwks.refresh_interval']
    remote = createRemoteJWKSet(url, {
      cacheMaxAge: refreshMs,
      cooldownDuration: Math.min(30_000, refreshMs),
      timeoutDuration: config['auth.jwt.timeout'] ?? 5000,
      // jose reads `uat` and `jwks` once here and writes both after each fetch it applies
      [jwksCache]: fetches as unknown as ExportedJWKSCache
    })
  }
  if (staticKeys.length === 0 && remote === undefined) {
    throw ConfigError.badValue('auth.jwt.secret', '', 'a key: set auth.jwt.secret, auth.jwt.pubkey or auth.jwt.jwks', 'plugin config')
  }

  /** Verifies `token` with the keys its header points at. */
  async function check (token: string): Promise<Checked> {
    let kid: string | undefined
    try {
      kid = decodeProtectedHeader(token).kid
    } catch {
      return { verdict: 'ignore' } // not a token (EMQ X: not_token)
    }
    if (remote !== undefined && (kid !== undefined || staticKeys.length === 0)) {
      try {
        return allowed((await jwtVerify(token, remote)).payload)
      } catch (err) {
        const code = (err as { code?: string }).code ?? ''
        if (code === 'ERR_JWKS_NO_MATCHING_KEY') return { verdict: 'ignore' } // EMQ X: not_found
        if (INVALID_TOKEN.has(code)) return { verdict: 'deny' }
        throw err // the set could not be fetched: the framework answers ignore and raises the alarm
      }
    }
    if (staticKeys.length === 0) return { verdict: 'ignore' }
    for (const key of staticKeys) {
      try {
        return allowed((await jwtVerify(token, key)).payload)
      } catch (err) {
        const code = (err as { code?: string }).code ?? ''
        // verified but out of date: no other key makes it valid
        if (code === 'ERR_JWT_EXPIRED' || code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') return { verdict: 'deny' }
        // any other failure (signature, a key of another kind): try the next key
      }
    }
    return { verdict: 'deny' }
  }

  /** EMQ X also refused a token issued in the future (`iat` after now); jose checks `exp` and `nbf`. */
  function allowed (claims: JWTPayload): Checked {
    if (typeof claims.iat === 'number' && claims.iat > Date.now() / 1000) return { verdict: 'deny' }
    return { verdict: 'allow', claims }
  }

  function claimsMatch (claims: JWTPayload, who: AuthContext): boolean {
    for (const [name, expected] of checks) {
      const value = expected === '%u' ? who.username : expected === '%c' ? who.clientId : expected
      if (value === undefined || claims[name] !== value) return false
    }
    return true
  }

  return {
    async authenticate (who: AuthContext, request: BackendRequest): Promise<BackendAuthResult> {
      const field = from === 'username' ? who.username : typeof who.password === 'string' ? who.password : who.password?.toString('utf8')
      if (field === undefined || field === '') {
        store.drop(who.clientId)
        return { verdict: 'ignore' }
      }
      const checked = await check(field)
      // the JWKS server answered since the last check said so (this check's fetch, or one a
      // timed-out check left running); a token verified with keys held says nothing of it
      if (fetches.count !== reportedFetches) {
        reportedFetches = fetches.count
        request.answered()
      }
      if (checked.verdict === 'allow' && !claimsMatch(checked.claims, who)) {
        logger.info({ clientId: who.clientId, username: who.username }, 'svc_auth_jwt: the token\'s claims do not match verify_claims')
        store.drop(who.clientId)
        return { verdict: 'deny' }
      }
      if (checked.verdict !== 'allow') {
        store.drop(who.clientId)
        return { verdict: checked.verdict }
      }
      store.set(who.clientId, who.username, checked.claims)
      return { verdict: 'allow', superuser: false }
    },
    async checkAcl (who: AuthContext, action: AclAction): Promise<BackendVerdict> {
      return decideJwtAcl(store.forAcl(who.clientId, who.username), aclClaim, who, action, who.topic ?? '')
    },
    async close () { store.clear() }
  }
}

const DEFINITION = {
  name: 'svc_auth_jwt',
  description: 'Authentication and ACL by JSON Web Tokens (EMQ X 4.4 emqx_auth_jwt)',
  prefix: 'auth.jwt',
  configSchema: AUTH_JWT_CONFIG_SCHEMA,
  // EMQ X's JWT ACL had no `$`-username rule: the token's claims decide for every client
  skipDollarUsernames: false
} as const

/**
 * The `svc_auth_jwt` plugin: the framework's backend plugin, plus a claims store per load
 * that the node's `client.disconnected` events empty (the framework's open context has no
 * hooks bus, so the load is wrapped here).
 */
export const svcAuthJwt: PluginDefinition = {
  ...defineAuthBackend({ ...DEFINITION, open: (ctx) => openJwt(ctx, new JwtClaimsStore()) }),
  load: async (ctx): Promise<PluginInstance> => {
    const store = new JwtClaimsStore()
    const backend = defineAuthBackend({ ...DEFINITION, open: (open) => openJwt(open, store) })
    const instance = await backend.load(ctx)
    const off = ctx.node.hooks.on('client.disconnected', (event) => { store.disconnected(event.client_id, event.connected_at) })
    return {
      ...instance,
      async unload () {
        off()
        await instance.unload()
      }
    }
  }
}
