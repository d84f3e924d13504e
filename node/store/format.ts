/**
 * The store's format version, so that a data directory written by an earlier release opens in
 * this one (docs/operations.md, "Upgrades"). The version lives in the store itself (table
 * `_meta`, key `format`); {@link STORE_FORMAT} is the version this code writes, and
 * {@link STORE_MIGRATIONS} lists the steps from each earlier version to the next.
 *
 * Invariants:
 * - A store is used only at {@link STORE_FORMAT}: opening one at an earlier version runs every
 *   step from its version up, in order, each step's writes committed before the version that
 *   says it ran (a crash in between runs the step again, so a step must be safe to repeat).
 * - A store at a later version (written by a newer release) is refused before anything reads
 *   or writes it: this code cannot know what the newer one changed.
 * - A store without a version was written before versions existed (releases up to 0.1.0,
 *   whose layout is format 1) or is new: either way it is format 1.
 *
 * Adding a format: raise STORE_FORMAT, append the step from the previous version, and add a
 * fixture written by the previous release with a test that opens it
 * (test/node/store/format.test.ts and test/e2e/store-upgrade.test.ts).
 */
import type { Logger } from '../logger.js'
import type { Store } from './store.js'

/** The format this code reads and writes. Format 1: the tables as of release 0.1.0. */
export const STORE_FORMAT = 1

/** The table holding the store's own facts (the format version). */
export const META_TABLE = '_meta'

/** One step: turns a store at format `from` into format `from + 1`. */
export interface StoreMigration {
  from: number
  /** What the step changes, for the log. */
  description: string
  migrate (store: Store): Promise<void>
}

/** The steps from each earlier format to the next, in order (none yet: format 1 is the first). */
export const STORE_MIGRATIONS: readonly StoreMigration[] = []

/** The format to reach and the steps to get there (the tests give their own). */
export interface StoreFormatPlan {
  version: number
  migrations: readonly StoreMigration[]
}

/**
 * Brings `store` to `plan.version` (see the module comment), or throws when it is newer.
 * Resolves with the version it was at.
 */
export async function upgradeStoreFormat (store: Store, logger: Logger, plan: StoreFormatPlan = { version: STORE_FORMAT, migrations: STORE_MIGRATIONS }): Promise<number> {
  const meta = store.table<number>(META_TABLE)
  const found = meta.get('format') ?? 1
  if (typeof found !== 'number' || !Number.isInteger(found) || found < 1) {
    throw new Error(`the store in ${store.dir} has an unreadable format version (${JSON.stringify(found)}); restore the data directory from a backup`)
  }
  if (found > plan.version) {
    throw new Error(`the store in ${store.dir} is format ${found}, written by a newer Starling; this one reads format ${plan.version} and older: run the newer release, or restore a data directory this release wrote`)
  }
  for (let version = found; version < plan.version; version++) {
    const step = plan.migrations.find((m) => m.from === version)
    if (step === undefined) throw new Error(`no step from store format ${version} to ${version + 1}`)
    logger.info({ dir: store.dir, from: version, to: version + 1, step: step.description }, 'upgrading the store format')
    await step.migrate(store)
    await store.flushed()
    await meta.put('format', version + 1)
  }
  if (meta.get('format') !== plan.version) await meta.put('format', plan.version)
  return found
}
