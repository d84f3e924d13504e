/**
 * The banned list (spec: Banned entry; docs/banned.md): entries in the store table
 * `banned`, checked by the broker at every CONNECT while they are live. The service layer
 * shared by `starling-ctl banned ...` and `/api/v3/banned`.
 *
 * Invariants:
 * - An entry is live while `until * 1000 > now` (ms); only live entries refuse a client
 *   or appear in `list()`. Expired ones are deleted by the periodic purge.
 * - One entry per (`as`, `who`): adding again replaces it (EMQ X 4 did the same).
 * - A client already connected when it gets banned stays connected (as in EMQ X 4); the
 *   ban applies to its next CONNECT. That holds for a ban added on another node too.
 * - On a node, the list is the cluster-wide table `banned` (docs/cluster-data.md): every
 *   read goes to the table, so an entry added or deleted on another node applies here from
 *   the moment it is applied; there is no cache to update.
 */
import type { Logger } from '../logger.js'
import type { AccessClient, BannedList, Broker } from '../mqtt/broker.js'
import { MAX_KEY_BYTES, type Store, type StoreTable } from '../store/index.js'
import type { SharedData, SharedTable } from '../store/shared.js'
import {
  BannedEntryNotFoundError, bannedKey, normaliseIp, parseBannedAs, parseBannedInput, parseBannedWho, shownBanned,
  type BannedAs, type BannedEntry, type BannedInput
} from './banned-entry.js'

/** The store table of the banned list. */
export const BANNED_TABLE = 'banned'

/** How often expired entries are deleted by default (ms). */
export const DEFAULT_PURGE_INTERVAL_MS = 60_000

/** What the banned service uses (a StarlingNode has all of them). */
export interface BannedServiceComponents {
  /** Holds the list when `shared` is not given (a node alone, tests). */
  store: Pick<Store, 'table'>
  /** The cluster-wide tables: when given, the list is its table `banned` and replicates. */
  shared?: Pick<SharedData, 'table'>
  broker: Pick<Broker, 'useBannedList'>
  logger: Logger
}

/** Options of {@link createBannedService}. */
export interface BannedServiceOptions {
  /** Interval of the purge of expired entries (ms, default one minute). */
  purgeIntervalMs?: number
  /** The clock (ms since epoch); tests pass their own. */
  now?: () => number
}

/** The banned list of a node. */
export interface BannedService extends BannedList {
  /**
   * Adds (or replaces) an entry from API or CLI input and resolves with what was stored.
   * Bad input throws BannedParameterMissingError (107) or BannedParameterInvalidError (108)
   * and changes nothing.
   */
  add (input: BannedInput): Promise<BannedEntry>
  /** Deletes the entry of (`as`, `who`); BannedEntryNotFoundError (102) when there is none. */
  delete (who: string, as: string): Promise<void>
  /** The live entries, ordered by `as`, then `who`. */
  list (): BannedEntry[]
  /** The live entry of (`as`, `who`), or undefined. */
  lookup (who: string, as: string): BannedEntry | undefined
  /**
   * The reason `client` is refused (its entry's `reason`, or `banned as <as>` when empty),
   * or null. Checks client id, then username, then peer IP address.
   */
  check (client: AccessClient): string | null
  /** Deletes expired entries; resolves with how many. */
  purge (): Promise<number>
  /** Becomes the broker's banned list and starts the periodic purge. */
  start (): Promise<void>
  /** Stops the purge and removes itself from the broker. */
  stop (): Promise<void>
}

/**
 * Creates the banned list over table {@link BANNED_TABLE} of `components.shared` (cluster-wide)
 * or, without it, of `components.store`.
 */
export function createBannedService (components: BannedServiceComponents, opts: BannedServiceOptions = {}): BannedService {
  const table: StoreTable<BannedEntry> & Partial<SharedTable<BannedEntry>> =
    components.shared?.table<BannedEntry>(BANNED_TABLE) ?? components.store.table<BannedEntry>(BANNED_TABLE)
  const logger = components.logger.child({ component: 'banned' })
  const now = opts.now ?? Date.now
  const purgeIntervalMs = opts.purgeIntervalMs ?? DEFAULT_PURGE_INTERVAL_MS
  let timer: NodeJS.Timeout | undefined
  let unfollow: (() => void) | undefined
  let offBroker: (() => void) | undefined

  const isLive = (entry: BannedEntry): boolean => entry.until * 1000 > now()
  /** The live entry at (as, who); `who` already normalised. */
  const liveEntry = (as: BannedAs, who: string): BannedEntry | undefined => {
    const key = bannedKey(as, who)
    if (Buffer.byteLength(key) > MAX_KEY_BYTES) return undefined
    const entry = table.get(key)
    return entry !== undefined && isLive(entry) ? entry : undefined
  }
  const refusal = (entry: BannedEntry | undefined): string | null =>
    entry === undefined ? null : (entry.reason !== '' ? entry.reason : `banned as ${entry.as}`)

  const service: BannedService = {
    async add (input) {
      const entry = parseBannedInput(input, now())
      await table.put(bannedKey(entry.as, entry.who), entry)
      logger.info({ who: entry.who, as: entry.as, by: entry.by, until: entry.until }, 'banned entry added')
      return entry
    },

    async delete (who, as) {
      const kind = parseBannedAs(as)
      const key = bannedKey(kind, parseBannedWho(who, kind))
      if (!table.has(key)) throw new BannedEntryNotFoundError(who, kind)
      await table.del(key)
      logger.info({ who, as: kind }, 'banned entry deleted')
    },

    list () {
      const out: BannedEntry[] = []
      for (const [, entry] of table.entries()) if (isLive(entry)) out.push(shownBanned(entry))
      return out
    },

    lookup (who, as) {
      const kind = parseBannedAs(as)
      const entry = liveEntry(kind, parseBannedWho(who, kind))
      return entry === undefined ? undefined : shownBanned(entry)
    },

    check (client) {
      return refusal(client.clientId !== '' ? liveEntry('client_id', client.clientId) : undefined) ??
        refusal(client.username !== undefined && client.username !== '' ? liveEntry('username', client.username) : undefined) ??
        refusal(client.peerhost !== '' ? liveEntry('ip_address', normaliseIp(client.peerhost)) : undefined)
    },

    async purge () {
      const expired = [...table.entries()].filter(([, entry]) => !isLive(entry)).map(([key]) => key)
      await Promise.all(expired.map((key) => table.del(key)))
      if (expired.length > 0) logger.debug({ count: expired.length }, 'expired banned entries purged')
      return expired.length
    },

    async start () {
      if (timer !== undefined) return
      offBroker = components.broker.useBannedList(service)
      // nothing to update (reads go to the table); the log says where a change came from
      unfollow = table.onRemoteChange?.((key, entry) => {
        if (entry !== undefined) logger.info({ who: entry.who, as: entry.as, until: entry.until }, 'banned entry added on another node')
        else logger.info({ key }, 'banned entry deleted on another node')
      })
      timer = setInterval(() => {
        service.purge().catch((err) => logger.warn({ err }, 'purge of expired banned entries failed'))
      }, purgeIntervalMs)
      timer.unref()
      await service.purge()
    },

    async stop () {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      unfollow?.()
      unfollow = undefined
      offBroker?.()
      offBroker = undefined
    }
  }
  return service
}
