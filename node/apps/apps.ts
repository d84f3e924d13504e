import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { Store, StoreTable } from '../store/index.js'
import type { Logger } from '../logger.js'
import { ApiError, CODES, notFound } from '../errors.js'

/** An API application (EMQ X 4 `mqtt_app`): HTTP Basic credentials of the management API. */
export interface App {
  app_id: string
  secret: string
  name: string
  desc: string
  /** Disabled applications cannot authenticate. */
  status: boolean
  /** Expiry, seconds since epoch, or null for never. */
  expired: number | null
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
  /** Adds an application; a missing secret is generated. Code 113 when the id exists. */
  add: (input: { app_id: string, name?: string, desc?: string, secret?: string, status?: boolean, expired?: number | null }) => Promise<App>
  lookup: (appId: string) => App | undefined
  list: () => App[]
  update: (appId: string, changes: Partial<Pick<App, 'name' | 'desc' | 'status' | 'expired'>>) => Promise<App>
  /** Deletes an application; the default one cannot be deleted (106). */
  delete: (appId: string) => Promise<void>
  /** True when `appId`/`secret` are a live, enabled application's credentials. */
  verify: (appId: string, secret: string) => boolean
  /** Creates or updates the default application from the configuration; returns its secret when it was just generated. */
  bootstrap: (appId: string, configuredSecret: string) => Promise<string | null>
}

function generateSecret (): string {
  return randomBytes(24).toString('base64url')
}

function sameSecret (a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/**
 * Creates the applications service over table {@link APPS_TABLE} of `tables` (pass
 * `node.shared`). Nothing is cached: `verify` reads the table on every request, so an
 * application added, changed or deleted on another node applies here once it is applied.
 */
export function createApps (tables: AppTables, logger: Logger, defaultAppId: () => string): AppsService {
  const table: StoreTable<App> = tables.table(APPS_TABLE)
  const get = (appId: string): App => {
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
        secret: input.secret ?? generateSecret(),
        name: input.name ?? input.app_id,
        desc: input.desc ?? '',
        status: input.status ?? true,
        expired: input.expired ?? null
      }
      await table.put(app.app_id, app)
      return app
    },
    lookup: (appId) => table.get(appId),
    list: () => [...table.entries()].map(([, app]) => app),
    async update (appId, changes) {
      const app = { ...get(appId), ...changes }
      await table.put(appId, app)
      return app
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
      return sameSecret(app.secret, secret)
    },
    async bootstrap (appId, configuredSecret) {
      const existing = table.get(appId)
      if (existing === undefined) {
        const secret = configuredSecret !== '' ? configuredSecret : generateSecret()
        await table.put(appId, { app_id: appId, secret, name: 'Default', desc: 'Application user', status: true, expired: null })
        return configuredSecret !== '' ? null : secret
      }
      // a configured secret is authoritative: the file or environment changed it
      if (configuredSecret !== '' && existing.secret !== configuredSecret) {
        await table.put(appId, { ...existing, secret: configuredSecret })
        logger.info({ appId }, 'default application secret updated from the configuration')
      }
      return null
    }
  }
  return service
}
