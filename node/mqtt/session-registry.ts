import { stateOf } from './client-state.js'
import type { HooksBus } from '../hooks.js'

/**
 * The sessions of this node that outlive their connection, by client id: MQTT 3.1.1 with
 * clean session 0, MQTT 5 with a Session Expiry Interval. aedes answers CONNACK session
 * present from stored subscriptions alone, so a session without subscriptions would be
 * reported absent; this registry is what the broker answers from [MQTT-3.2.2-2].
 *
 * Invariant: a session leaves the registry when its state is discarded, and that always
 * goes through the persistence's `cleanSubscriptions` (Clean Start [MQTT-3.1.2-4], a
 * session ending with its connection, expiry, a session taken over by another node), so
 * that one method is followed; it joins when a client with a lasting session is accepted,
 * or when the cluster imports a session taken over from another node (`importSession`).
 */
export class SessionRegistry {
  private readonly sessions = new Set<string>()
  /** Lasting sessions without a connection: since when, their expiry interval (ms) and user, for `session.terminated`. */
  private readonly away = new Map<string, { at: number, expiryMs: number, username: string | undefined }>()

  /**
   * Follows `aedes`' clients and `persistence`'s session ends. Call after the persistence
   * has loaded: the sessions it restored are present too.
   */
  constructor (aedes: any, persistence: any, hooks?: HooksBus, node = '') {
    for (const { clientId } of persistence.persistentSessions?.() ?? []) this.sessions.add(clientId)
    aedes.on('client', (client: any) => {
      this.away.delete(client.id)
      if (client.clean === false) this.sessions.add(client.id)
    })
    aedes.on('clientDisconnect', (client: any) => {
      // sessionExpiryInterval: seconds, already clamped to mqtt.session_expiry_interval (v3 too)
      if (client.clean === false) this.away.set(client.id, { at: Date.now(), expiryMs: (client.sessionExpiryInterval ?? 0) * 1000, username: stateOf(client)?.username })
    })
    const cleanSubscriptions = persistence.cleanSubscriptions.bind(persistence)
    persistence.cleanSubscriptions = (client: { id: string }) => {
      // a session ending with its connection is reported at the close (broker-events.ts)
      if (this.sessions.delete(client.id) && hooks?.has('session.terminated') === true) {
        const connecting = aedes.clients[client.id]
        hooks.emit('session.terminated', {
          event: 'session.terminated', client_id: client.id, username: stateOf(connecting)?.username ?? this.away.get(client.id)?.username,
          reason: this.endReason(client.id, connecting), timestamp: Date.now(), node
        })
      }
      this.away.delete(client.id)
      return cleanSubscriptions(client)
    }
    // a session taken over from another node of the cluster exists here from then on
    if (typeof persistence.importSession === 'function') {
      const importSession = persistence.importSession.bind(persistence)
      persistence.importSession = (clientId: string, ...rest: unknown[]) => {
        this.sessions.add(clientId)
        return importSession(clientId, ...rest)
      }
    }
  }

  /**
   * Why a lasting session ends: `discarded` by a Clean Start CONNECT of its client, or
   * before its expiry interval ran out (the API's `clients clean`, the cluster moving it to
   * another node); else `expired` (its timer, or a session restored at start whose
   * disconnection this node did not see).
   */
  private endReason (clientId: string, connecting: any): string {
    if (stateOf(connecting)?.cleanStart === true) return 'discarded'
    const away = this.away.get(clientId)
    // the expiry timers may fire a little early
    return away !== undefined && Date.now() - away.at < away.expiryMs - 1000 ? 'discarded' : 'expired'
  }

  /** Whether a session of `clientId` exists (connected or not). */
  has (clientId: string): boolean {
    return this.sessions.has(clientId)
  }

  /**
   * Called once a CONNECT is accepted, before aedes restores the session. Returns whether
   * an existing session is resumed (Clean Start 0 and a session exists): CONNACK then says
   * session present [MQTT-3.2.2-2].
   *
   * A v5 client that resumes a session with Session Expiry 0 (the CONNECT has none) gets
   * that session, queued messages included, and the session ends when this connection
   * closes [MQTT-3.1.2-23]. aedes would treat it as a clean session and drop the queue
   * while resending it, so the client is marked persistent for the connection's lifetime;
   * aedes still wipes the session at close, its expiry interval being 0.
   */
  resume (client: any): boolean {
    if (stateOf(client)?.cleanStart !== false || !this.sessions.has(client.id)) return false
    if (client.version === 5 && client.sessionExpiryInterval === 0) client.clean = false
    return true
  }
}
