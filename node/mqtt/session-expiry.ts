import type { Logger } from '../logger.js'
import type { StorePersistence } from './persistence.js'
import { willPublish } from './will.js'

/** setTimeout's longest delay; longer expiries are re-armed in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Session expiry where aedes has none:
 * - MQTT 3.1.1 persistent sessions (clean session = false) expire after
 *   `mqtt.session_expiry_interval` without a connection, as in EMQ X (aedes keeps them forever);
 * - sessions restored from the store after a restart get a fresh `mqtt.session_expiry_interval`
 *   (aedes' v5 expiry timers live in memory only);
 * - wills restored after a crash are published at start: their connection ended uncleanly.
 * A client that reconnects before its session expires cancels the timer.
 */
export class SessionExpiry {
  private readonly timers = new Map<string, NodeJS.Timeout>()
  private readonly onClient = (client: any): void => this.cancel(client.id)
  private readonly onDisconnect = (client: any): void => {
    // MQTT 5 sessions are timed by aedes itself (Session Expiry Interval)
    if (this.aedes.closed || client.version === 5 || client.clean !== false) return
    this.arm(client.id, this.expiryMs)
  }

  constructor (
    private readonly aedes: any,
    private readonly persistence: StorePersistence,
    private readonly expiryMs: number,
    private readonly logger: Logger
  ) {}

  /** Publishes restored wills, arms timers for restored sessions, follows connections. */
  async start (): Promise<void> {
    let wills = 0
    for await (const will of this.persistence.streamWill({})) {
      await new Promise<void>(resolve => this.aedes.publish({ ...willPublish(will), cmd: 'publish' }, () => resolve()))
      await this.persistence.delWill({ id: will.clientId })
      wills++
    }
    let sessions = 0
    for (const { clientId } of this.persistence.persistentSessions()) {
      this.arm(clientId, this.expiryMs)
      sessions++
    }
    if (wills + sessions > 0) this.logger.info({ wills, sessions }, 'restored sessions armed for expiry; wills of crashed connections published')
    this.aedes.on('client', this.onClient)
    this.aedes.on('clientDisconnect', this.onDisconnect)
  }

  /** Cancels every timer (sessions stay stored). */
  stop (): void {
    this.aedes.off('client', this.onClient)
    this.aedes.off('clientDisconnect', this.onDisconnect)
    for (const timer of this.timers.values()) clearTimeout(timer)
    this.timers.clear()
  }

  private arm (clientId: string, ms: number): void {
    this.cancel(clientId)
    const timer = setTimeout(() => {
      this.timers.delete(clientId)
      if (ms > MAX_TIMER_MS) return this.arm(clientId, ms - MAX_TIMER_MS)
      if (this.aedes.clients[clientId] !== undefined) return
      this.persistence.dropSession(clientId).then(
        () => this.logger.debug({ clientId }, 'session expired'),
        (err) => this.logger.error({ err, clientId }, 'could not remove an expired session'))
    }, Math.min(ms, MAX_TIMER_MS))
    timer.unref()
    this.timers.set(clientId, timer)
  }

  private cancel (clientId: string): void {
    const timer = this.timers.get(clientId)
    if (timer !== undefined) {
      clearTimeout(timer)
      this.timers.delete(clientId)
    }
  }
}
