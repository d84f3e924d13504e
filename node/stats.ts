/**
 * The node's stats: integer gauges with the spec's names (section "Stats"), each `*\/count`
 * with a `*\/max` high-water mark kept since the node started. Read by the stats API,
 * `$SYS/brokers/<node>/stats/<name>` and the CLI.
 *
 * Counts are computed on demand from the MQTT core (O(connected clients + persistent
 * sessions)); high-water marks are raised by every computation and by the hooks bus
 * events in between (see {@link createStats}).
 */
import type { Broker } from './mqtt/broker.js'
import type { ClientTally, ClientView } from './mqtt/core.js'
import type { HooksBus } from './hooks.js'
import { SHARE_MARKER } from './mqtt/topic.js'

/** Every stat name, in the spec's order. */
export const STAT_NAMES = [
  'connections/count', 'connections/max',
  'sessions/count', 'sessions/max',
  'sessions/persistent/count', 'sessions/persistent/max',
  'subscriptions/count', 'subscriptions/max',
  'subscriptions/shared/count', 'subscriptions/shared/max',
  'subscribers/count', 'subscribers/max',
  'topics/count', 'topics/max',
  'routes/count', 'routes/max',
  'retained/count', 'retained/max'
] as const

export type StatName = typeof STAT_NAMES[number]

/** The spec's Stats object (the API adds `node` in the cluster form). */
export type StatsSnapshot = Record<StatName, number>

/** What the stats read: the MQTT core and the hooks bus. */
export interface StatsComponents {
  broker: Pick<Broker, 'core' | 'router'>
  hooks: HooksBus
}

/** The node's stats service. */
export interface Stats {
  /** Starts following connect and subscribe events for the high-water marks. */
  start(): void
  /** Stops following events (values stay readable). */
  stop(): void
  /** Every stat, computed now; raises the `*\/max` values it passes. */
  snapshot(): StatsSnapshot
}

/** The counts, before the maxima are applied. */
type Counts = Record<'connections' | 'sessions' | 'sessions/persistent' | 'subscriptions' | 'subscriptions/shared' |
'subscribers' | 'topics' | 'routes' | 'retained', number>

/**
 * One connected client's share of the counts; kept (with the client's view, to tell its
 * connection from a later one of the same id) only when it is not zero.
 */
interface ClientShare { client: ClientView | undefined, subs: number, shared: number, persistent: boolean }

/** Counts of connected clients, kept up to date by events (see {@link createStats}). */
interface LiveCounts { subs: number, shared: number, subscribers: number, persistent: number }

/**
 * Creates the stats of a node.
 *
 * Definitions (EMQ X's): `connections` = connected clients; `sessions` = connected clients
 * plus persistent sessions whose client is away; `sessions/persistent` = sessions that
 * outlive their connection (connected or not); `subscriptions` = subscriptions of connected
 * clients plus the stored ones of away sessions; `subscriptions/shared` = shared
 * subscriptions of connected clients; `subscribers` = sessions with at least one
 * subscription; `topics` = `routes` = the route table's filters; `retained` = retained
 * messages.
 *
 * High-water marks: every {@link Stats.snapshot} computes everything and raises them. In
 * between, connect, subscribe, unsubscribe and disconnect events keep the connected
 * clients' share up to date (O(that client's subscriptions) per event) and raise the marks
 * with it at once, so a peak that lasts one event is not missed. Away sessions are counted
 * at snapshots only, so between snapshots the marks may miss a peak they cause.
 */
export function createStats (c: StatsComponents): Stats {
  const max: Counts = { connections: 0, sessions: 0, 'sessions/persistent': 0, subscriptions: 0, 'subscriptions/shared': 0, subscribers: 0, topics: 0, routes: 0, retained: 0 }
  const unsubscribe: Array<() => void> = []
  const shares = new Map<string, ClientShare>()
  const live: LiveCounts = { subs: 0, shared: 0, subscribers: 0, persistent: 0 }

  function shareOf (client: ClientTally): ClientShare {
    let subs = 0
    let shared = 0
    for (const filter in client.subscriptions) {
      subs++
      if (filter.startsWith(SHARE_MARKER) || filter.startsWith('$queue/')) shared++
    }
    return { client: undefined, subs, shared, persistent: client.clean === false }
  }

  /**
   * Keeps `share` of client `clientId` and counts it, unless it is zero: an idle clean client
   * (most connections) then costs the stats nothing, not even a view of it.
   */
  function keep (clientId: string, share: ClientShare): void {
    if (share.subs === 0 && !share.persistent) return
    share.client = c.broker.core.client(clientId)
    shares.set(clientId, share)
    apply(share, 1)
  }

  function apply (share: ClientShare, sign: 1 | -1): void {
    live.subs += sign * share.subs
    live.shared += sign * share.shared
    if (share.subs > 0) live.subscribers += sign
    if (share.persistent) live.persistent += sign
  }

  /** Recounts every connected client; resets the event-kept counts (no drift survives it). Returns how many there are. */
  function recountConnected (): number {
    shares.clear()
    live.subs = live.shared = live.subscribers = live.persistent = 0
    let connected = 0
    for (const client of c.broker.core.tallies()) {
      connected++
      keep(client.id, shareOf(client))
    }
    return connected
  }

  function counts (): Counts {
    const core = c.broker.core
    const connections = recountConnected()
    let subscriptions = live.subs
    let subscribers = live.subscribers
    let away = 0
    for (const session of core.sessions.persistentSessions()) {
      if (core.client(session.clientId) !== undefined) continue
      away++
      subscriptions += session.subscriptions
      if (session.subscriptions > 0) subscribers++
    }
    return { ...base(connections), sessions: connections + away, 'sessions/persistent': live.persistent + away, subscriptions, subscribers }
  }

  /** The counts known without scanning: connected clients' share, routes, retained. */
  function base (connections: number): Counts {
    const routes: number = c.broker.router.routeCount
    return {
      connections,
      sessions: connections,
      'sessions/persistent': live.persistent,
      subscriptions: live.subs,
      'subscriptions/shared': live.shared,
      subscribers: live.subscribers,
      topics: routes,
      routes,
      retained: c.broker.core.sessions.retainedCount()
    }
  }

  function raise (now: Counts): void {
    for (const key in now) {
      const k = key as keyof Counts
      if (now[k] > max[k]) max[k] = now[k]
    }
  }

  /** A client connected or changed its subscriptions: recount its share. */
  function refresh (clientId: string): void {
    const client = c.broker.core.tallyOf(clientId)
    const previous = shares.get(clientId)
    if (previous !== undefined) apply(previous, -1)
    shares.delete(clientId)
    if (client !== undefined) keep(clientId, shareOf(client))
    raise(base(c.broker.core.clientCount))
  }

  /**
   * Clients whose share is recounted at the end of the turn: a burst of SUBSCRIBE packets
   * from one client costs one recount, not one per packet (each recount walks all of the
   * client's subscriptions).
   */
  const dirty = new Set<string>()
  let refreshScheduled = false
  function refreshSoon (clientId: string): void {
    dirty.add(clientId)
    if (refreshScheduled) return
    refreshScheduled = true
    setImmediate(refreshDirty)
  }
  function refreshDirty (): void {
    refreshScheduled = false
    for (const clientId of dirty) refresh(clientId)
    dirty.clear()
  }

  /** A client left: drop its share unless a new connection already took its id over. */
  function left (clientId: string): void {
    const share = shares.get(clientId)
    if (share === undefined || c.broker.core.client(clientId) === share.client) return
    apply(share, -1)
    shares.delete(clientId)
  }

  return {
    start () {
      if (unsubscribe.length > 0) return
      recountConnected()
      unsubscribe.push(c.hooks.on('client.connected', (e) => refresh(e.client_id)))
      unsubscribe.push(c.hooks.on('client.subscribe', (e) => refreshSoon(e.client_id)))
      unsubscribe.push(c.hooks.on('client.unsubscribe', (e) => refreshSoon(e.client_id)))
      unsubscribe.push(c.hooks.on('client.disconnected', (e) => left(e.client_id)))
    },
    stop () {
      for (const off of unsubscribe.splice(0)) off()
    },
    snapshot () {
      refreshDirty()
      const now = counts()
      raise(now)
      const ordered = {} as StatsSnapshot
      for (const key in now) {
        const k = key as keyof Counts
        ordered[`${k}/count` as StatName] = now[k]
        ordered[`${k}/max` as StatName] = max[k]
      }
      // spec order, whatever order the counts were built in
      const out = {} as StatsSnapshot
      for (const name of STAT_NAMES) out[name] = ordered[name]
      return out
    }
  }
}
