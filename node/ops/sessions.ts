/**
 * The sessions of one node (the spec's Session resource): the sessions of connected
 * clients and the persistent sessions whose client is away. Node operations
 * `sessions.list` (`{clientid?}`) and `sessions.clean` (`{clientid}`: ends an away
 * persistent session, EMQ X 3.4's `clean_session`). Field choices are in docs/api.md (Sessions).
 */
import type { StarlingNode } from '../node.js'
import type { NodeRpc } from '../rpc.js'
import type { HooksBus } from '../hooks.js'
import type { StarlingConfig } from '../config/index.js'
import type { Broker } from '../mqtt/broker.js'
import { ApiError, NotFoundError, RefusedError } from '../errors.js'
import type { ClientView, PublishMessage } from '../mqtt/core.js'
import type { PersistentSessionInfo } from '../mqtt/persistence.js'
import { willPublish } from '../mqtt/will.js'
import { formatDatetime } from '../sys/sys-info.js'
import { bufferedBytes, connectedClients } from './connections.js'

/** The spec's Session. */
export interface Session {
  /** Incoming QoS 2 messages waiting for their PUBREL (0 for an away session). */
  awaiting_rel_len: number
  /** Always `local`: the session lives on this node. */
  binding: string
  clean_start: boolean
  client_id: string
  /** When the session began, `YYYY-MM-DD HH:MM:SS` (local time). */
  created_at: string
  /** Messages sent to the client over its current connection (0 for an away session). */
  deliver_msg: number
  /** Messages that entered the session: delivered over the current connection plus still queued. */
  enqueue_msg: number
  /** Seconds the session outlives its connection. */
  expiry_interval: number
  heap_size: number
  /** QoS 1/2 messages sent and not yet acknowledged. */
  inflight_len: number
  mailbox_len: number
  /** `mqtt.max_awaiting_rel`. */
  max_awaiting_rel: number
  /** `mqtt.max_inflight`. */
  max_inflight: number
  /** `mqtt.max_mqueue_len`. */
  max_mqueue: number
  /** `mqtt.max_subscriptions`. */
  max_subscriptions: number
  /** Messages dropped from the session's queue because it was full (`mqtt.max_mqueue_len`). */
  mqueue_dropped: number
  /** Messages queued for the client and not yet sent. */
  mqueue_len: number
  node: string
  reductions: number
  subscriptions_count: number
  /** The user name of the session's last connection, or the text `undefined`. */
  username: string
}

/**
 * What the session operations use of the node: its MQTT core, its configuration (the
 * session limits), its name and when it started. (Recording begins at registration, on the
 * node's hooks bus.)
 */
export type SessionsComponents = Pick<StarlingNode, 'broker' | 'config' | 'name' | 'startedAt'>

/** What is remembered of a session that may outlive its connection. */
interface SessionRecord {
  createdAt: number
  username: string | undefined
  expiryInterval: number
}

/**
 * Facts about sessions that the MQTT core does not keep: when a session began and who
 * owned it, for sessions that can outlive their connection (clean start off, or an
 * MQTT 5 Session Expiry Interval). Clean sessions are not recorded: they begin at connect.
 * Invariant: entries are dropped when the client leaves with a clean session, and when a
 * listing finds neither a connection nor a stored session for them.
 */
class SessionRecords {
  readonly records = new Map<string, SessionRecord>()

  constructor (hooks: HooksBus) {
    hooks.on('client.connected', (e) => {
      if (e.clean_start && e.expiry_interval === 0) { this.records.delete(e.client_id); return }
      const previous = this.records.get(e.client_id)
      const createdAt = !e.clean_start && previous !== undefined ? previous.createdAt : e.connected_at
      this.records.set(e.client_id, { createdAt, username: e.username, expiryInterval: e.expiry_interval })
    })
  }

  /** Forgets every record that is neither connected nor in `stored`. */
  prune (connected: (id: string) => boolean, stored: Map<string, unknown>): void {
    for (const id of this.records.keys()) {
      if (!connected(id) && !stored.has(id)) this.records.delete(id)
    }
  }
}

/** The records of each node, by the object its operations were registered with (the node). */
const recordsByNode = new WeakMap<SessionsComponents, SessionRecords>()

function intConfig (config: StarlingConfig, key: string): number {
  return Number((config as Record<string, any>)[key] ?? 0)
}

/** The session fields every session of `node` shares: the limits from the configuration. */
function limits (node: SessionsComponents): Pick<Session, 'binding' | 'max_awaiting_rel' | 'max_inflight' | 'max_mqueue' | 'max_subscriptions' | 'node'> {
  return {
    binding: 'local',
    max_awaiting_rel: intConfig(node.config, 'mqtt.max_awaiting_rel'),
    max_inflight: intConfig(node.config, 'mqtt.max_inflight'),
    max_mqueue: intConfig(node.config, 'mqtt.max_mqueue_len'),
    max_subscriptions: intConfig(node.config, 'mqtt.max_subscriptions'),
    node: node.name
  }
}

/** The stored queues and subscriptions by client id. */
function storedSessions (broker: Broker): Map<string, PersistentSessionInfo> {
  const out = new Map<string, PersistentSessionInfo>()
  for (const s of broker.core.sessions.persistentSessions()) out.set(s.clientId, s)
  return out
}

function connectedSession (node: SessionsComponents, client: ClientView, stored: PersistentSessionInfo | undefined, record: SessionRecord | undefined): Session {
  const state = client.state
  const wire = client.wire
  const inflight = stored?.inflight ?? 0
  const mqueue = (stored?.queued ?? 0) - inflight
  const deliver = wire?.counters.sendMsg ?? 0
  const connectedAt = state !== undefined && state.connectedAt > 0 ? state.connectedAt : Date.now()
  return {
    ...limits(node),
    awaiting_rel_len: node.broker.core.sessions.awaitingRel(client.id),
    clean_start: state?.cleanStart ?? client.clean !== false,
    client_id: client.id,
    created_at: formatDatetime(new Date(record?.createdAt ?? connectedAt)),
    deliver_msg: deliver,
    enqueue_msg: deliver + mqueue,
    expiry_interval: state?.expiryInterval ?? 0,
    heap_size: bufferedBytes(wire),
    inflight_len: inflight,
    mailbox_len: 0,
    mqueue_dropped: stored?.dropped ?? 0,
    mqueue_len: mqueue,
    reductions: wire !== undefined ? wire.counters.recvPkt + wire.counters.sendPkt : 0,
    subscriptions_count: Object.keys(client.subscriptions).length,
    username: state?.username ?? 'undefined'
  } as Session
}

function awaySession (node: SessionsComponents, stored: PersistentSessionInfo, record: SessionRecord | undefined): Session {
  const mqueue = stored.queued - stored.inflight
  return {
    ...limits(node),
    awaiting_rel_len: node.broker.core.sessions.awaitingRel(stored.clientId),
    clean_start: false,
    client_id: stored.clientId,
    // restored from the store after a restart: began (for this node) when the node started
    created_at: formatDatetime(new Date(record?.createdAt ?? node.startedAt)),
    deliver_msg: 0,
    enqueue_msg: stored.queued,
    expiry_interval: record?.expiryInterval ?? Math.floor(intConfig(node.config, 'mqtt.session_expiry_interval') / 1000),
    heap_size: 0,
    inflight_len: stored.inflight,
    mailbox_len: 0,
    mqueue_dropped: stored.dropped,
    mqueue_len: mqueue,
    reductions: 0,
    subscriptions_count: stored.subscriptions,
    username: record?.username ?? 'undefined'
  } as Session
}

/** Sorts the keys of a session as the spec lists them (alphabetical). */
function ordered (session: Session): Session {
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(session).sort()) out[key] = (session as unknown as Record<string, unknown>)[key]
  return out as unknown as Session
}

/** The sessions of `node`: connected clients first (connection order), then away sessions. */
export function sessionsOf (node: SessionsComponents, filter: { clientid?: string } = {}): Session[] {
  const records = recordsByNode.get(node)
  const stored = storedSessions(node.broker)
  const core = node.broker.core
  const held = (id: string): boolean => core.client(id) !== undefined
  records?.prune(held, stored)
  const out: Session[] = []
  const wanted = (id: string): boolean => filter.clientid === undefined || filter.clientid === id
  for (const client of connectedClients(node.broker)) {
    if (wanted(client.id)) out.push(connectedSession(node, client, stored.get(client.id), records?.records.get(client.id)))
  }
  for (const session of stored.values()) {
    if (!held(session.clientId) && wanted(session.clientId)) out.push(awaySession(node, session, records?.records.get(session.clientId)))
  }
  return out.map(ordered)
}

/**
 * What one node did with `sessions.clean`: ended the client's away session (`cleaned`),
 * refused because the client is connected to it (`connected`), or had no session of it.
 */
export type SessionCleanOutcome = 'cleaned' | 'connected' | 'absent'

/**
 * Ends the persistent session of `clientid` on `node` while its client is away: its stored
 * subscriptions (and the routes they held), queued and in-flight messages, QoS 2 state are
 * dropped, as when the session expires; a will still waiting for its Will Delay Interval is
 * published now, the session having ended [MQTT-3.1.3-9]. A connected client's session is
 * left alone (`connected`): kick the client first (EMQ X's `running_session`).
 */
export async function cleanAwaySession (node: SessionsComponents, clientid: string): Promise<SessionCleanOutcome> {
  const core = node.broker.core
  if (core.client(clientid) !== undefined) return 'connected'
  const persistence = core.sessions
  const stored = storedSessions(node.broker).has(clientid)
  const will = await persistence.getWill({ id: clientid })
  if (!stored && will === undefined) return 'absent'
  if (will !== undefined) {
    await persistence.delWill({ id: clientid })
    // published whatever happens to it: the session ends either way
    await core.publish({ ...willPublish(will), cmd: 'publish' } as PublishMessage).catch(() => {})
  }
  await persistence.dropSession(clientid)
  recordsByNode.get(node)?.records.delete(clientid)
  return 'cleaned'
}

/** The error of a clean that did nothing: the client is connected (102, HTTP 400) or has no session (102, HTTP 404). */
function cleanRefused (clientid: string, outcome: SessionCleanOutcome, where: string): ApiError {
  if (outcome === 'connected') {
    return new RefusedError(`client ${clientid} is connected${where}: only the session of an away client can be cleaned; kick it first (DELETE /api/v3/connections/${clientid})`)
  }
  return NotFoundError.withMessage(`no persistent session of client ${clientid}${where}`)
}

/**
 * `DELETE /sessions/persistent/:clientid`: every running node ends its away session of
 * `clientid` (a session lives on one node, but a node that was away when the client moved
 * may still hold one). Succeeds when a node cleaned one; refused when the client is
 * connected anywhere (nothing is cleaned then), 404 when no node had one (naming the nodes
 * that did not answer).
 */
export async function cleanPersistentSession (rpc: NodeRpc, clientid: string): Promise<void> {
  const connected = await rpc.callAll<unknown[]>('connections.list', { clientid })
  if (connected.some(a => a.ok && a.result.length > 0)) throw cleanRefused(clientid, 'connected', '')
  const answers = await rpc.callAll<SessionCleanOutcome>('sessions.clean', { clientid })
  if (answers.some(a => a.ok && a.result === 'cleaned')) return
  if (answers.some(a => a.ok && a.result === 'connected')) throw cleanRefused(clientid, 'connected', '')
  const failed = answers.filter(a => !a.ok).map(a => a.node)
  throw cleanRefused(clientid, 'absent', failed.length > 0 ? ` (nodes that did not answer: ${failed.join(', ')})` : '')
}

/** `DELETE /nodes/:node/sessions/persistent/:clientid`: the same on `node` only. */
export async function cleanNodePersistentSession (rpc: NodeRpc, node: string, clientid: string): Promise<void> {
  const outcome = await rpc.call<SessionCleanOutcome>(node, 'sessions.clean', { clientid })
  if (outcome !== 'cleaned') throw cleanRefused(clientid, outcome, ` on node ${node}`)
}

/** Starts recording session facts and registers `sessions.list` and `sessions.clean` on `node.rpc`. */
export function registerSessionOperations (node: StarlingNode): void {
  recordsByNode.set(node, new SessionRecords(node.hooks))
  node.rpc.register('sessions.list', (args: { clientid?: string } | undefined): Session[] => sessionsOf(node, args ?? {}))
  node.rpc.register('sessions.clean', async (args: { clientid: string }) => await cleanAwaySession(node, args.clientid))
}
