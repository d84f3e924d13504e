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

  /**
   * Follows `aedes`' clients and `persistence`'s session ends. Call after the persistence
   * has loaded: the sessions it restored are present too.
   */
  constructor (aedes: any, persistence: any, hooks?: HooksBus, node = '') {
    for (const { clientId } of persistence.persistentSessions?.() ?? []) this.sessions.add(clientId)
    aedes.on('client', (client: any) => { if (client.clean === false) this.sessions.add(client.id) })
    const cleanSubscriptions = persistence.cleanSubscriptions.bind(persistence)
    persistence.cleanSubscriptions = (client: { id: string }) => {
      // a lasting session ends: discarded by a Clean Start CONNECT of its client, else expired
      // (a session ending with its connection is reported at the close: broker-events.ts)
      if (this.sessions.delete(client.id) && hooks?.has('session.terminated') === true) {
        const connecting = aedes.clients[client.id] ?? client
        const discarded = stateOf(connecting)?.cleanStart === true && (connecting as any).connected !== true
        hooks.emit('session.terminated', {
          event: 'session.terminated', client_id: client.id, username: stateOf(connecting)?.username,
          reason: discarded ? 'discarded' : 'expired', timestamp: Date.now(), node
        })
      }
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
