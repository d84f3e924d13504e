import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Store, StoreTable } from '../store/index.js'
import type { Logger } from '../logger.js'
import { ApiError, CODES, notFound } from '../errors.js'

/**
 * An API application (EMQ X 4 `mqtt_app`): HTTP Basic credentials of the management API, as
 * shown. The secret is never part of it: it is shown once, when created ({@link NewApp}), and
 * kept only as a salted hash (EMQ X served it back: a documented deviation, docs/api.md).
 */
export interface App {
  app_id: string
  name: string
  desc: string
  /** Disabled applications cannot authenticate. */
  status: boolean
  /** Expiry, seconds since epoch, or null for never. */
  expired: number | null
}

/** A just created application, with its secret: the only time the secret is shown. */
export interface NewApp extends App { secret: string }

/**
 * An application as stored: `secret_hash` is `sha256:<salt hex>:<digest hex>` of salt and
 * secret. A record of an older version may still hold `secret` in clear; it is hashed at
 * start ({@link AppsService.migrate}).
 */
interface StoredApp extends App {
  secret_hash?: string
  secret?: string
}

/** Store table of the applications (cluster-wide data). */
export const APPS_TABLE = 'mqtt_app'

/**
 * Where the applications live: the node's shared data (`node.shared`, cluster-wide: an
 * application added on one node can call the API of every node) or, alone, its store.
 */
export type AppTables = Pick<Store, 'table'>

/** Manages API applications; shared by the API's auth, `starling-ctl mgmt` and the apps API. */
export interface AppsService {
  /** Adds an application; a missing secret is generated. Code 113 when the id exists. The answer is the only one with the secret. */
  add: (input: { app_id: string, name?: string, desc?: string, secret?: string, status?: boolean, expired?: number | null }) => Promise<NewApp>
  lookup: (appId: string) => App | undefined
  list: () => App[]
  update: (appId: string, changes: Partial<Pick<App, 'name' | 'desc' | 'status' | 'expired'>>) => Promise<App>
  /** Deletes an application; the default one cannot be deleted (106). */
  delete: (appId: string) => Promise<void>
  /** True when `appId`/`secret` are a live, enabled application's credentials. */
  verify: (appId: string, secret: string) => boolean
  /** Creates or updates the default application from the configuration; returns its secret when it was just generated. */
  bootstrap: (appId: string, configuredSecret: string) => Promise<string | null>
  /** Hashes the secrets an older version stored in clear; returns how many. */
  migrate: () => Promise<number>
}

function generateSecret (): string {
  return randomBytes(24).toString('base64url')
}

/**
 * A salted SHA-256 of `secret`. Enough for secrets we generate (24 random bytes) and cheap
 * enough to check on every API request; a slow KDF would cost each request milliseconds.
 */
function hashSecret (secret: string, salt: Buffer = randomBytes(16)): string {
  const digest = createHash('sha256').update(salt).update(secret).digest('hex')
  return `sha256:${salt.toString('hex')}:${digest}`
}

/** Whether `secret` is the one `app` was created with (constant time in the digest). */
function secretMatches (app: StoredApp, secret: string): boolean {
  if (app.secret_hash === undefined) return app.secret !== undefined && sameText(app.secret, secret)
  const [scheme, salt, digest] = app.secret_hash.split(':')
  if (scheme !== 'sha256' || salt === undefined || digest === undefined) return false
  return sameText(hashSecret(secret, Buffer.from(salt, 'hex')), app.secret_hash)
}

function sameText (a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** The shown form of a stored application: every field but the secret. */
function shown (app: StoredApp): App {
  return { app_id: app.app_id, name: app.name, desc: app.desc, status: app.status, expired: app.expired }
}

/** A stored record with `secret` hashed (and no clear secret left in it). */
function stored (app: App, secret: string): StoredApp {
  return { ...shown(app), secret_hash: hashSecret(secret) }
}

/**
 * Creates the applications service over table {@link APPS_TABLE} of `tables` (pass
 * `node.shared`). Nothing is cached: `verify` reads the table on every request, so an
 * application added, changed or deleted on another node applies here once it is applied.
 */
export function createApps (tables: AppTables, logger: Logger, defaultAppId: () => string): AppsService {
  const table: StoreTable<StoredApp> = tables.table(APPS_TABLE)
  const get = (appId: string): StoredApp => {
    const app = table.get(appId)
    if (app === undefined) throw notFound(`application ${appId}`)
    return app
  }
  const service: AppsService = {
    async add (input) {
      if (typeof input.app_id !== 'string' || input.app_id === '') throw new ApiError(CODES.MISSING_PARAMETER, 'missing parameter app_id')
      if (table.has(input.app_id)) throw new ApiError(CODES.USER_EXISTS, `application ${input.app_id} already exists`)
      const app: App = {
        app_id: input.app_id,
        name: input.name ?? input.app_id,
        desc: input.desc ?? '',
        status: input.status ?? true,
        expired: input.expired ?? null
      }
      const secret = input.secret ?? generateSecret()
      await table.put(app.app_id, stored(app, secret))
      return { ...app, secret }
    },
    lookup: (appId) => {
      const app = table.get(appId)
      return app === undefined ? undefined : shown(app)
    },
    list: () => [...table.entries()].map(([, app]) => shown(app)),
    async update (appId, changes) {
      const app = { ...get(appId), ...changes }
      await table.put(appId, app)
      return shown(app)
    },
    async delete (appId) {
      get(appId)
      if (appId === defaultAppId()) throw new ApiError(CODES.ADMIN_NOT_DELETABLE, `the default application ${appId} cannot be deleted`)
      await table.del(appId)
    },
    verify (appId, secret) {
      const app = table.get(appId)
      if (app === undefined || !app.status) return false
      if (app.expired !== null && app.expired * 1000 < Date.now()) return false
      return secretMatches(app, secret)
    },
    async bootstrap (appId, configuredSecret) {
      const existing = table.get(appId)
      if (existing === undefined) {
        const secret = configuredSecret !== '' ? configuredSecret : generateSecret()
        await table.put(appId, stored({ app_id: appId, name: 'Default', desc: 'Application user', status: true, expired: null }, secret))
        return configuredSecret !== '' ? null : secret
      }
      // a configured secret is authoritative: the file or environment changed it
      if (configuredSecret !== '' && !secretMatches(existing, configuredSecret)) {
        await table.put(appId, stored(existing, configuredSecret))
        logger.info({ appId }, 'default application secret updated from the configuration')
      }
      return null
    },
    async migrate () {
      let count = 0
      for (const [appId, app] of [...table.entries()]) {
        if (app.secret_hash !== undefined || app.secret === undefined) continue
        await table.put(appId, stored(app, app.secret))
        count++
      }
      if (count > 0) logger.info({ count }, 'API application secrets stored in clear by an older version are now hashed')
      return count
    }
  }
  return service
}
