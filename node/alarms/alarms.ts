/**
 * The node's alarms (spec: "Alarm"): present alarms in memory, history in the store
 * (table `alarm_history`, the newest {@link ALARM_HISTORY_LIMIT} kept, so it survives a
 * restart), and `$SYS/brokers/<node>/alarms/activate|deactivate` messages when an alarm is
 * raised or cleared. The OS monitor raises the `system` alarms; the cluster raises
 * `partitioned`. Alarms are per node: the API fans out to collect the cluster's.
 *
 * As in EMQ X, raising an alarm that is already present, or clearing one that is not,
 * changes nothing and publishes nothing. Present alarms do not survive a restart.
 */
import type { Logger } from '../logger.js'
import type { Store, StoreTable } from '../store/index.js'
import { formatDatetime } from '../sys/sys-info.js'
import { publishSys, sysTopicPrefix, type SysPublishTarget } from '../sys/sys-publish.js'

/** Level of each alarm id of the spec; an id not listed here is a `system` alarm. */
export const ALARM_LEVELS: Readonly<Record<string, 'system' | 'cluster'>> = {
  cpu_high_watermark: 'system',
  system_memory_high_watermark: 'system',
  process_memory_high_watermark: 'system',
  too_many_processes: 'system',
  partitioned: 'cluster'
}

/** Most history entries kept; the oldest go first. */
export const ALARM_HISTORY_LIMIT = 1000

/** Store table of the history. */
export const ALARM_HISTORY_TABLE = 'alarm_history'

/** An entry of the present-alarms list (the spec leaves these fields open; docs/alarms.md). */
export interface PresentAlarm {
  /** Alarm id, e.g. `cpu_high_watermark`. */
  id: string
  /** What is wrong, in words. */
  desc: string
  /** `system` or `cluster`. */
  level: string
  /** Measurements and thresholds behind it, e.g. `{ usage: '91.2%', high_watermark: '80%' }`. */
  details: Record<string, unknown>
  /** When it was raised, `YYYY-MM-DD HH:MM:SS` (local time). */
  activate_at: string
}

/** A history entry: the spec's `id`, `desc`, `clear_at`, plus what the present entry had. */
export interface AlarmHistoryEntry extends PresentAlarm {
  /** When it was cleared, `YYYY-MM-DD HH:MM:SS` (local time). */
  clear_at: string
}

/** What the alarms use from the node. */
export interface AlarmsNode {
  readonly name: string
  readonly store: Store
  readonly broker: SysPublishTarget['broker']
  readonly logger: Logger
}

/** The node's alarm registry. */
export interface Alarms {
  /** Raises `id` unless it is present; returns whether it was raised now. */
  activate (id: string, desc: string, details?: Record<string, unknown>): boolean
  /** Clears `id` if present (moving it to the history); returns whether it was present. */
  deactivate (id: string): boolean
  /** True while `id` is present. */
  isActive (id: string): boolean
  /** Present alarms, oldest first. */
  present (): PresentAlarm[]
  /** Cleared alarms, newest first (committed entries only). */
  history (): AlarmHistoryEntry[]
  /** Resolves when every history write issued so far is committed. */
  flushed (): Promise<void>
}

/** Creates the alarm registry of a node (history loaded from its store). */
export function createAlarms (node: AlarmsNode): Alarms {
  const logger = node.logger.child({ component: 'alarms' })
  const target = { broker: node.broker, logger }
  const prefix = sysTopicPrefix(node.name) + 'alarms/'
  const table: StoreTable<AlarmHistoryEntry> = node.store.table(ALARM_HISTORY_TABLE)
  const active = new Map<string, PresentAlarm>()
  let seq = 0
  for (const [key] of table.entries()) seq = Math.max(seq, Number(key))
  let writes: Promise<void> = Promise.resolve()

  function record (entry: AlarmHistoryEntry): void {
    const key = String(++seq).padStart(12, '0')
    const write = table.put(key, entry).then(async () => {
      const excess = table.count() - ALARM_HISTORY_LIMIT
      if (excess <= 0) return
      const oldest: string[] = []
      for (const [k] of table.entries()) {
        if (oldest.length >= excess) break
        oldest.push(k)
      }
      await Promise.all(oldest.map((k) => table.del(k)))
    }).catch((err: Error) => logger.error({ err, id: entry.id }, 'cannot store the alarm history'))
    writes = Promise.all([writes, write]).then(() => undefined)
  }

  return {
    activate (id, desc, details = {}) {
      if (active.has(id)) return false
      const alarm: PresentAlarm = { id, desc, level: ALARM_LEVELS[id] ?? 'system', details, activate_at: formatDatetime() }
      active.set(id, alarm)
      logger.warn({ alarm: id, details }, `alarm raised: ${desc}`)
      publishSys(target, prefix + 'activate', JSON.stringify(alarm))
      return true
    },
    deactivate (id) {
      const alarm = active.get(id)
      if (alarm === undefined) return false
      active.delete(id)
      const entry: AlarmHistoryEntry = { ...alarm, clear_at: formatDatetime() }
      logger.info({ alarm: id }, `alarm cleared: ${alarm.desc}`)
      record(entry)
      publishSys(target, prefix + 'deactivate', JSON.stringify(entry))
      return true
    },
    isActive: (id) => active.has(id),
    present: () => [...active.values()],
    history () {
      const out: AlarmHistoryEntry[] = []
      for (const [, entry] of table.entries()) out.push(entry)
      return out.reverse()
    },
    flushed: () => writes
  }
}
