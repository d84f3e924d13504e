import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { MAX_KEY_BYTES, type Store, type StoreTable } from '../store/index.js'
import type { Logger } from '../logger.js'
import { AdminNotDeletableError, MissingParameterError, UserExistsError, UserNotFoundError, WrongTypeError } from '../errors.js'

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

/** What {@link AppsService.add} takes (`POST /apps/`, `mgmt insert`). */
export interface NewAppInput { app_id: string, name?: string, desc?: string, secret?: string, status?: boolean, expired?: number | null }

/** What {@link AppsService.update} may change: EMQ X 3.4's `update_app` fields (never the secret). */
export type AppChanges = Partial<Pick<App, 'name' | 'desc' | 'status' | 'expired'>>

/**
 * Manages API applications; shared by the API's auth, `starling-ctl mgmt` and the apps API
 * (`/api/v3/apps/`). Codes: 107 a missing field, 108 a field of the wrong type or value,
 * 113 an id that exists, 105 (HTTP 404) an unknown id, 106 deleting the default application.
 */
export interface AppsService {
  /** Adds an application; a missing secret is generated. Code 113 when the id exists. The answer is the only one with the secret. */
  add: (input: NewAppInput) => Promise<NewApp>
  lookup: (appId: string) => App | undefined
  /** The application `appId`, or 105 (HTTP 404) when there is none. */
  get: (appId: string) => App
  list: () => App[]
  /** Changes the given fields only; 105 for an unknown id, 107 when nothing is given. */
  update: (appId: string, changes: AppChanges) => Promise<App>
  /** Deletes an application; 105 for an unknown id; the default one cannot be deleted (106). */
  delete: (appId: string) => Promise<void>
  /** True when `appId`/`secret` are a live, enabled application's credentials. */
  verify: (appId: string, secret: string) => boolean
  /** Creates or updates the default application from the configuration; returns its secret when it was just generated. */
  bootstrap: (appId: string, configuredSecret: string) => Promise<string | null>
  /** Hashes the secrets an older version stored in clear; returns how many. */
  migrate: () => Promise<number>
  /** Every application with its stored secret hash (`sha256:<salt hex>:<digest hex>`), for a data export. */
  exportAll: () => Array<App & { secret_hash: string }>
  /**
   * Writes `app` as a data import gives it, replacing one of the same id: `secret` is a hash
   * as {@link exportAll} shows it (kept) or a secret in clear (EMQ X's exports: hashed here).
   */
  restore: (app: App, secret: string) => Promise<void>
}

/** Whether `secret` is a hash as this service stores it (and exports it), not a secret in clear. */
export function isSecretHash (secret: string): boolean {
  return /^sha256:[0-9a-f]{32}:[0-9a-f]{64}$/.test(secret)
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

/** 108 unless `value` is text (or absent). */
function optionalText (value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string') throw new WrongTypeError(`${field} must be a string, not ${JSON.stringify(value)}`)
  return value
}

/** The checked changes of an add or update: wrong types are 108. */
function checkedChanges (input: Record<string, unknown>): AppChanges {
  const out: AppChanges = {}
  const name = optionalText(input.name, 'name')
  const desc = optionalText(input.desc, 'desc')
  if (name !== undefined) out.name = name
  if (desc !== undefined) out.desc = desc
  if (input.status !== undefined) {
    if (typeof input.status !== 'boolean') throw new WrongTypeError(`status must be true or false, not ${JSON.stringify(input.status)}`)
    out.status = input.status
  }
  if (input.expired !== undefined) {
    const e = input.expired
    if (e !== null && (typeof e !== 'number' || !Number.isSafeInteger(e) || e <= 0)) {
      throw new WrongTypeError(`expired must be seconds since the epoch (a positive integer) or null for never, not ${JSON.stringify(e)}`)
    }
    out.expired = e
  }
  return out
}

/**
 * 107/108 unless `appId` can be an application id: the HTTP Basic user name, so no `:`
 * (Basic splits user and secret at the first one) and no control characters.
 */
function checkAppId (appId: unknown): string {
  if (appId === undefined || appId === null || appId === '') throw new MissingParameterError('missing parameter app_id')
  if (typeof appId !== 'string') throw new WrongTypeError(`app_id must be a string, not ${JSON.stringify(appId)}`)
  // eslint-disable-next-line no-control-regex
  if (/[:\u0000-\u001f\u007f]/.test(appId)) throw new WrongTypeError(`app_id ${JSON.stringify(appId)} cannot hold ':' or control characters (it is the HTTP Basic user name)`)
  if (Buffer.byteLength(appId) > MAX_KEY_BYTES) throw new WrongTypeError(`app_id is too long: at most ${MAX_KEY_BYTES} bytes`)
  return appId
}

/**
 * An application's fields checked as an add checks them (107/108), with the defaults filled:
 * what a data import validates before it writes anything.
 */
export function checkAppRecord (input: Record<string, unknown>): App {
  const appId = checkAppId(input.app_id)
  const fields = checkedChanges(input)
  return { app_id: appId, name: fields.name ?? appId, desc: fields.desc ?? '', status: fields.status ?? true, expired: fields.expired ?? null }
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
    const app = Buffer.byteLength(appId) > MAX_KEY_BYTES ? undefined : table.get(appId)
    if (app === undefined) throw new UserNotFoundError(`application ${appId} does not exist; GET /api/v3/apps/ (or starling-ctl mgmt list) lists them`)
    return app
  }
  const service: AppsService = {
    async add (input) {
      const appId = checkAppId(input.app_id)
      const fields = checkedChanges(input as unknown as Record<string, unknown>)
      const given = optionalText(input.secret, 'secret')
      if (given === '') throw new WrongTypeError('secret cannot be empty: leave it out to have one generated')
      if (table.has(appId)) throw new UserExistsError(`application ${appId} already exists`)
      const app: App = {
        app_id: appId,
        name: fields.name ?? appId,
        desc: fields.desc ?? '',
        status: fields.status ?? true,
        expired: fields.expired ?? null
      }
      const secret = given ?? generateSecret()
      await table.put(app.app_id, stored(app, secret))
      return { ...app, secret }
    },
    lookup: (appId) => {
      const app = table.get(appId)
      return app === undefined ? undefined : shown(app)
    },
    get: (appId) => shown(get(appId)),
    list: () => [...table.entries()].map(([, app]) => shown(app)),
    async update (appId, changes) {
      const checked = checkedChanges(changes as Record<string, unknown>)
      const existing = get(appId)
      if (Object.keys(checked).length === 0) throw new MissingParameterError('nothing to change: give at least one of name, desc, status, expired')
      const app = { ...existing, ...checked }
      await table.put(appId, app)
      return shown(app)
    },
    async delete (appId) {
      get(appId)
      if (appId === defaultAppId()) throw new AdminNotDeletableError(`the default application ${appId} cannot be deleted`)
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
    },
    exportAll: () => [...table.entries()].map(([, app]) => ({ ...shown(app), secret_hash: app.secret_hash ?? hashSecret(app.secret ?? generateSecret()) })),
    async restore (app, secret) {
      const record = checkAppRecord(app as unknown as Record<string, unknown>)
      await table.put(record.app_id, isSecretHash(secret) ? { ...record, secret_hash: secret } : stored(record, secret))
    }
  }
  return service
}
