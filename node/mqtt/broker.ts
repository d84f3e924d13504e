import { Aedes } from 'aedes'
import type { Duplex } from 'node:stream'
import type { TLSSocket } from 'node:tls'
import { type ConnectionOrigin, type AuthInfo, type AuthVerdict, type AuthResult, type Authenticator, type AccessClient, type AccessControl, type BannedList, type BrokerComponents } from './broker-types.js'
import { QOS_RECEIVED_METRIC } from '../metrics.js'
import { MessageRouter } from './router.js'
import { Wire } from './wire.js'
import type { SentMessage } from './wire-types.js'
import { AckPublishers } from './ack-publishers.js'
import { topicLevels, displayFilter } from './topic.js'
import { createConnackRewriter } from './connack.js'
import { ViolationCloser } from './violation.js'
import { createForwardFilter } from './forward.js'
import { clientState, stateOf, ConnectionState, type ClientState } from './client-state.js'
import { installFastDeliver } from './fast-deliver.js'
import { useFastWrites } from './fast-write.js'
import { releaseRead } from './read-gate.js'
import { installServerDisconnect } from './server-disconnect.js'
import { installOutboundWindow } from './outbound-window.js'
import { SessionRegistry } from './session-registry.js'
import { installWillPublish } from './will.js'
import { assignClientId } from './client-id.js'
import { attachClientEvents, connectEvent, messageEvent } from './broker-events.js'
import type { MessageEvent } from '../hooks.js'
import { PublishHold } from './publish-hold.js'
import { combineTaps, type PacketTap } from '../sys/packet-tap.js'
import { countDropReason } from '../sys/drop-metrics.js'
import type { BrokerSettings } from './settings.js'
import { ZoneTable, type ZonePart } from './zone-table.js'
import { expandMountpoint, mountFilter, mountTopic, type ZoneSettings } from './zone.js'
import { negotiateKeepalive } from './keepalive.js'
import { startSessionLimits, type SessionLimits } from './session-limits.js'
import { AedesCore, type MqttCore } from './core.js'
import { peerCertUsername } from './listeners.js'
import { SessionExpiry } from './session-expiry.js'
import { newClient, slimConnectingClient, closeOnSocketClose } from './client-slim.js'
import { releaseKeepalive } from './keepalive-wheel.js'
import { takeConnects } from './connect.js'
import type { Logger } from '../logger.js'

export type { BrokerSettings }
export type { MqttCore, ClientView, SessionStore, PublishMessage, SubscriptionOptions, SubscriptionRequest } from './core.js'
export type { ConnectionOrigin, AuthVerdict, AuthInfo, Authenticator, AccessClient, AccessControl, BannedList, BrokerComponents } from './broker-types.js'

/**
 * The node's MQTT core: aedes 2 (wrapped, not forked) with the gaps filled around it.
 * Per connection, a {@link Wire} interposes on the socket; per message, the router (aedes'
 * `mq`) delivers; aedes' hooks carry our policies (auth, authorization, forwarding).
 */
export class Broker {
  /** aedes itself: read in node/mqtt/ only; everything else uses {@link core}. */
  private readonly aedes: any
  private readonly aedesCore: AedesCore
  readonly router: MessageRouter
  /** The auth chain, highest priority first; see {@link addAuthenticator}. */
  readonly authenticators: Authenticator[] = []
  /** The ACL, while the ACL service runs (see {@link useAccessControl}); null allows everything. */
  private acl: AccessControl | null = null
  /** The banned list, while there is one (see {@link useBannedList}). */
  private banned: BannedList | null = null
  /** The packet taps added with {@link addPacketTap}, in order. */
  private packetTaps: readonly PacketTap[] = []
  /** What each new wire taps: the delivery retries (`mqtt.retry_interval`), then the {@link packetTaps}. */
  private wireTap: PacketTap
  /** Run once a CONNECT is authenticated, before the session is set up; see {@link addAcceptHook}. */
  private acceptHooks: AcceptHooks = []
  /** `mqtt.max_mqueue_len`, `max_subscriptions`, `max_awaiting_rel`, `await_rel_timeout` ... */
  private readonly sessionLimits: SessionLimits
  /** `acl_deny_action`: `disconnect` closes a client whose publish or subscribe is denied. */
  aclDenyAction: 'ignore' | 'disconnect' = 'ignore'
  private readonly wires = new Set<Wire>()
  /** Per zone: the settings its clients see and the limits its wires share. */
  private readonly zones: ZoneTable
  private readonly violations: ViolationCloser
  /** The sessions that outlive their connection (CONNACK session present); set once the persistence is loaded. */
  private sessions: SessionRegistry | null = null

  private constructor (private readonly settings: BrokerSettings, private readonly c: BrokerComponents, aedes: any, router: MessageRouter) {
    this.aedes = aedes
    this.aedesCore = new AedesCore(aedes, c.persistence, wireOf, router, (event) => this.holdPublish(event), (topic) => this.watches(topic))
    this.router = router
    this.violations = new ViolationCloser(aedes)
    this.zones = new ZoneTable(settings)
    this.sessionLimits = startSessionLimits(aedes, router, c.persistence, settings, (packet, reason) => this.dropped(packet, reason),
      (err) => c.logger.warn({ err }, 'queueing a message for an away session failed'))
    this.wireTap = this.sessionLimits.tapWith(null)
  }

  /** Creates and starts the MQTT core (aedes and its persistence set up, no listener yet). */
  static async create (settings: BrokerSettings, c: BrokerComponents): Promise<Broker> {
    useFastWrites()
    const aedesId = settings.nodeName
    // the hooks need the Broker, which needs aedes: they reach it through this holder
    const self: { broker?: Broker } = {}
    const router = new MessageRouter(settings.sharedStrategy, `$SYS/${aedesId}/`, {
      onNoSubscribers: (packet) => self.broker!.dropped(packet, 'no_subscribers'),
      onPublish: (packet) => self.broker!.routed(packet)
    })
    const aedes: any = new Aedes({
      id: aedesId,
      mq: router,
      persistence: c.persistence,
      connectTimeout: settings.idleTimeoutMs,
      // aedes' matcher ceiling; mqtt.max_topic_levels is enforced by us (wire and authorizers),
      // because aedes would count the levels of `$share/<group>/` and of refused filters
      maxTopicLevels: 100,
      maxClientsIdLength: settings.maxClientIdLen,
      topicAliasMaximum: settings.maxTopicAlias,
      maximumPacketSize: settings.maxPacketSize,
      receiveMaximum: settings.maxInflight,
      sessionExpiryIntervalLimit: Math.floor(settings.sessionExpiryMs / 1000),
      queueLimit: 1000,
      // a subscriber that does not drain its socket for this long is disconnected (aedes then
      // also waits for 'drain' with one listener per client instead of one per write)
      drainTimeout: 60000,
      preConnect: (client: any, packet: any, cb: any) => self.broker!.preConnect(client, packet, cb),
      authenticate: (client: any, username: any, password: any, cb: any) => { self.broker!.authenticate(client, username, password, cb) },
      authorizePublish: (client: any, packet: any, cb: any) => self.broker!.authorizePublish(client, packet, cb),
      authorizeSubscribe: (client: any, sub: any, cb: any) => self.broker!.authorizeSubscribe(client, sub, cb),
      authorizeForward: createForwardFilter(settings, (client, packet) => self.broker!.delivered(client, packet), (packet, reason) => self.broker!.dropped(packet, reason)),
      published: (packet: any, client: any, cb: any) => self.broker!.published(packet, client, cb)
    } as any)
    // the hooks above need `broker`, and aedes publishes its birth message in listen()
    const broker = self.broker = new Broker(settings, c, aedes, router)
    router.localBrokerId = aedes.id
    attachClientEvents(aedes, c.hooks, settings.nodeName, (client) => wireOf(client)?.closeReason ?? 'closed')
    await aedes.listen()
    broker.sessions = new SessionRegistry(aedes, c.persistence, c.hooks, settings.nodeName)
    installWillPublish(aedes)
    router.markReady()
    aedes.on('clientError', (client: any, err: Error) => c.logger.debug({ clientId: client?.id, err: err.message }, 'client error'))
    aedes.on('connectionError', (_client: any, err: Error) => c.logger.debug({ err: err.message }, 'connection error'))
    aedes.on('keepaliveTimeout', (client: any) => { const w = wireOf(client); if (w) w.closeReason = 'keepalive_timeout' })
    aedes.on('error', (err: Error) => c.logger.error({ err }, 'broker error'))
    return broker
  }

  /**
   * Runs `hook` once a CONNECT is authenticated, before aedes sets up the session (the
   * cluster takes over a session of the same client id on another node there); hooks run
   * in the order added, and a failing one is logged and the client still accepted. A hook
   * with nothing to do returns no promise: the CONNECT then goes on in the same turn. Returns
   * the function that removes it.
   */
  addAcceptHook (hook: AcceptHook): () => void {
    this.acceptHooks = [...this.acceptHooks, hook]
    return () => { this.acceptHooks = this.acceptHooks.filter(h => h !== hook) }
  }

  /**
   * Decides every publish and subscribe with `acl` (the ACL service); returns the function
   * that removes it again (everything is allowed then). One ACL at a time.
   */
  useAccessControl (acl: AccessControl): () => void {
    if (this.acl !== null) throw new Error('the broker already has an ACL')
    this.acl = acl
    return () => { if (this.acl === acl) this.acl = null }
  }

  /** The ACL in force, or null (for the ACL check operation). */
  get accessControl (): AccessControl | null { return this.acl }

  /** Refuses banned clients at CONNECT with `list`; returns the function that removes it. One list at a time. */
  useBannedList (list: BannedList): () => void {
    if (this.banned !== null) throw new Error('the broker already has a banned list')
    this.banned = list
    return () => { if (this.banned === list) this.banned = null }
  }

  /** The banned list in force, or null. */
  get bannedList (): BannedList | null { return this.banned }

  /**
   * Shows every frame of each connection accepted from now on to `tap` (missed acks,
   * traces); taps see a frame in the order they were added. Returns the function that
   * removes it (for connections accepted after that).
   */
  addPacketTap (tap: PacketTap): () => void {
    this.setPacketTaps([...this.packetTaps, tap])
    return () => { this.setPacketTaps(this.packetTaps.filter(t => t !== tap)) }
  }

  private setPacketTaps (taps: readonly PacketTap[]): void {
    this.packetTaps = taps
    this.wireTap = this.sessionLimits.tapWith(taps.length === 0 ? null : combineTaps(...taps))
  }

  /** The typed MQTT core: clients, sessions, retained messages, publishing. */
  get core (): MqttCore { return this.aedesCore }

  /**
   * The session expiry aedes lacks (v3 persistent sessions, sessions restored after a
   * restart), over this broker's persistence; started and stopped by its caller.
   */
  createSessionExpiry (logger: Logger): SessionExpiry {
    return new SessionExpiry(this.aedes, this.c.persistence, this.settings.sessionExpiryMs, logger)
  }

  private readonly taps: Array<{ prefix: string, fn: (event: MessageEvent) => void }> = []

  /** Whether a message published on `topic` now would reach a `message.publish` listener or a tap (see {@link routed}). */
  private watches (topic: string): boolean {
    if (this.c.hooks.has('message.publish')) return true
    for (const tap of this.taps) if (topic.startsWith(tap.prefix)) return true
    return false
  }

  /** The QoS 1/2 `message.publish` event being dispatched on the hooks bus, and the hold taken on it (see {@link holdPublish}). */
  private dispatching: MessageEvent | null = null
  private dispatchHold: PublishHold | undefined = undefined

  /**
   * A client-visible message published on this node, as the router routes it: its
   * `message.publish` event. Returns the hold a listener took on it (publish-hold.ts), if any.
   */
  private routed (packet: any): PublishHold | undefined {
    // the copy aedes routes (it has brokerCounter, so every event of this message shares an id)
    const taps = this.taps
    const node = this.settings.nodeName
    for (let i = 0; i < taps.length; i++) {
      if (packet.topic.startsWith(taps[i].prefix)) taps[i].fn(messageEvent('message.publish', node, packet, this.aedes.clients[packet.clientId] ?? null))
    }
    if (!this.c.hooks.has('message.publish')) return undefined
    const event = messageEvent('message.publish', node, packet, this.aedes.clients[packet.clientId] ?? null)
    if (packet.qos === 0) {
      this.c.hooks.emit('message.publish', event)
      return undefined
    }
    // a listener may publish while it runs (synchronously): the outer event is restored after
    const outer = this.dispatching
    const outerHold = this.dispatchHold
    this.dispatching = event
    this.dispatchHold = undefined
    this.c.hooks.emit('message.publish', event)
    const hold = this.dispatchHold
    this.dispatching = outer
    this.dispatchHold = outerHold
    if (hold !== undefined) waitsOnBackend(this.aedes.clients[packet.clientId])
    return hold
  }

  /**
   * Holds the publish of the message whose `message.publish` event is `event` (its PUBACK or
   * PUBREC, and the publisher's next packets) until the returned hold's `release`. Only while
   * that QoS 1/2 event is being dispatched (a hooks-bus listener, synchronously); otherwise
   * undefined, and nothing is held.
   */
  holdPublish (event: MessageEvent): PublishHold | undefined {
    if (event !== this.dispatching) return undefined
    const hold = this.dispatchHold ??= new PublishHold()
    hold.take()
    return hold
  }

  /**
   * Calls `fn` with the `message.publish` event of every message published on this node
   * whose topic starts with `prefix` (e.g. `$delayed/`). Cheaper than a hooks-bus listener,
   * which makes the broker build an event for every message. Returns a function that stops it.
   */
  tapPublishes (prefix: string, fn: (event: MessageEvent) => void): () => void {
    const tap = { prefix, fn }
    this.taps.push(tap)
    return () => { const i = this.taps.indexOf(tap); if (i !== -1) this.taps.splice(i, 1) }
  }

  /**
   * Applies changed settings at run time (the configs API): open connections follow, since
   * the wires share one limits object and aedes reads its options per connection or packet.
   * The session expiry keeps its start value (its timers are armed with it).
   */
  applySettings (next: BrokerSettings): void {
    const { sessionExpiryMs: _kept, ...live } = next
    Object.assign(this.settings, live)
    // in place: every wire of a zone holds its zone's limits
    this.zones.apply(next)
    const aedes = this.aedes
    aedes.maximumPacketSize = next.maxPacketSize
    aedes.maxClientsIdLength = next.maxClientIdLen
    aedes.topicAliasMaximum = next.maxTopicAlias
    aedes.receiveMaximum = next.maxInflight
    aedes.connectTimeout = next.idleTimeoutMs
    this.router.setStrategy(next.sharedStrategy)
  }

  /** Adds a provider to the auth chain, keeping it sorted by priority (stable). */
  addAuthenticator (provider: Authenticator): void {
    this.removeAuthenticator(provider.name)
    const i = this.authenticators.findIndex(p => p.priority < provider.priority)
    if (i === -1) this.authenticators.push(provider)
    else this.authenticators.splice(i, 0, provider)
  }

  /** Removes a provider from the auth chain by name. */
  removeAuthenticator (name: string): void {
    const i = this.authenticators.findIndex(p => p.name === name)
    if (i !== -1) this.authenticators.splice(i, 1)
  }

  /** Who `client` is, for ACL and banned checks. */
  private accessClient (client: any): AccessClient {
    const access = stateOf(client)?.access
    if (access === undefined) return { clientId: client.id, username: undefined, peerhost: '' }
    // aedes assigns the id of a client that sent none after preConnect
    if (access.clientId !== client.id) access.clientId = client.id
    return access
  }

  /** Number of connections with a wire (accepted sockets, connected or not yet). */
  get connectionCount (): number { return this.wires.size }

  /**
   * Serves one accepted socket (TCP, TLS or a WebSocket stream). The broker never throws on
   * what a client sends: protocol errors close that connection only.
   */
  handle (socket: Duplex, origin: ConnectionOrigin): Wire {
    const wire = new Wire(socket, this.zones.part(origin.zone).limits, this.c.metrics, this.onViolation)
    // the origin has the peer's address and port: no object of its own per connection
    wire.peer = origin
    wire.origin = origin
    wire.acks = this.ackWatch
    wire.tap = this.wireTap
    ;(socket as any)[WIRE] = wire
    this.wires.add(wire)
    // one listener function for every socket (`on`: 'close' comes once; `once` would wrap it)
    socket.on('close', this.onSocketClose)
    const client = newClient(this.aedes, socket, ownsClose(origin))
    takeConnects(client)
    return wire
  }

  /** The zone of `client`'s connection. */
  private zoneOf (client: any): ZonePart {
    return this.zones.part(stateOf(client)?.zone)
  }

  /** Closes every client (v5 clients get DISCONNECT 0x8B) and aedes. */
  async close (): Promise<void> {
    for (const wire of this.wires) wire.closeReason = 'shutdown'
    this.sessionLimits.stop()
    await new Promise<void>(resolve => this.aedes.close(() => resolve()))
  }

  /**
   * Every socket's 'close' listener (`this` is the socket): forgets its wire, tells the
   * listener, and, for TCP and TLS, closes the aedes client in place of aedes'
   * stream.finished (client-slim.ts). One function, not a closure per connection.
   */
  private readonly onSocketClose = ((broker: Broker) => function (this: Duplex): void {
    const wire: Wire | undefined = (this as any)[WIRE]
    const client = (this as any).client
    if (wire !== undefined) {
      broker.wires.delete(wire)
      if (wire.origin !== null) {
        wire.origin.onClose(wire.closeReason)
        if (ownsClose(wire.origin)) closeOnSocketClose(client)
      }
    }
    releaseKeepalive(client)
  })(this)

  /** What fast-deliver.ts reports a dropped delivery to: one function for every client. */
  private readonly droppedQos0 = (packet: any, reason: string): void => { this.dropped(packet, reason) }

  /** Every wire's violation handler: one function, not a closure per connection. */
  private readonly onViolation = (wire: Wire, reasonCode: number, message: string): void => { this.disconnectForViolation(wire, reasonCode, message) }

  private disconnectForViolation (wire: Wire, reasonCode: number, message: string): void {
    wire.closeReason = 'protocol_error'
    const client = (wire.socket as any).client
    this.c.logger.debug({ clientId: client?.id, reasonCode, message }, 'protocol violation')
    // after the current read: aedes has taken the frames before the offending one
    queueMicrotask(() => this.violations.close(wire, reasonCode))
  }

  private preConnect (client: any, packet: any, cb: (err: Error | null, ok: boolean) => void): void {
    const wire = wireOf(client)
    const origin = wire?.origin
    const v5 = packet.protocolVersion === 5
    // mqtt.server_keepalive and mqtt.max_keepalive (keepalive.ts); a refused v3 client is answered in authenticate
    const keepalive = negotiateKeepalive(packet.protocolVersion, packet.keepalive ?? 0, this.settings)
    const state: ClientState = new ConnectionState(origin ?? undefined, {
      topicAliasMaximum: packet.properties?.topicAliasMaximum ?? 0,
      maximumPacketSize: packet.properties?.maximumPacketSize ?? 0,
      aliases: null,
      username: packet.username,
      peerhost: origin?.address ?? '',
      listener: origin?.protocol ?? '',
      zone: origin?.zone ?? 'external',
      mountpoint: undefined,
      protoVer: packet.protocolVersion,
      protoName: packet.protocolId ?? 'MQTT',
      keepalive: keepalive.refused === undefined ? keepalive.keepalive : packet.keepalive,
      keepaliveRefused: keepalive.refused,
      cleanStart: packet.clean !== false,
      expiryInterval: v5 ? (packet.properties?.sessionExpiryInterval ?? 0) : (packet.clean !== false ? 0 : Math.floor(this.settings.sessionExpiryMs / 1000)),
      isBridge: packet.bridgeMode === true,
      connProps: packet.properties ?? NO_PROPERTIES,
      connectedAt: 0,
      access: {
        clientId: client.id,
        username: packet.username,
        peerhost: origin?.address ?? '',
        sockport: origin?.localPort,
        listener: origin?.protocol,
        ...certificateNames(origin?.tlsSocket)
      }
    })
    // listener.ssl.external.peer_cert_as_username (EMQ X): the certificate names the client
    const certUsername = peerCertUsername(origin?.peerCertAsUsername, origin?.tlsSocket, state.access)
    if (certUsername !== undefined) packet.username = state.username = state.access.username = certUsername
    client[clientState] = state
    if (this.c.hooks.has('client.connect')) this.c.hooks.emit('client.connect', connectEvent(this.settings.nodeName, packet.clientId ?? '', state))
    slimConnectingClient(client, packet)
    if (wire) {
      installFastDeliver(client, wire, this.droppedQos0)
      installServerDisconnect(client)
    }
    // the client's Receive Maximum on what we send it [MQTT-3.3.4-9]; 65535 (the default) needs no window
    const receiveMaximum = v5 ? packet.properties?.receiveMaximum : undefined
    if (wire && typeof receiveMaximum === 'number' && receiveMaximum > 0 && receiveMaximum < 65535) installOutboundWindow(client, wire, receiveMaximum)
    if (packet.protocolVersion === 5) {
      // MQTT 5 Server Keep Alive [MQTT-3.2.2-21]: aedes' own limit (keepaliveLimit) answers a v3
      // client with return code 6, which 3.1.1 does not have, so set the value its CONNACK and
      // keepalive timer read directly.
      if (keepalive.refused === undefined && keepalive.serverKeepAlive !== undefined) client._serverKeepAlive = keepalive.serverKeepAlive
      if (wire) wire.connackRewriter = createConnackRewriter(this.zones.part(origin?.zone).settings)
    }
    cb(null, true)
  }

  private authenticate (client: any, username: string | undefined, password: Buffer | undefined,
    cb: AuthCallback): void {
    // [MQTT-3.1.3-6], [MQTT-3.1.3-7]: aedes names a client without an id `aedes_<uuid>` (42
    // characters); ours fits any mqtt.max_clientid_len and goes back in CONNACK (v5)
    if (client._assignedClientId !== undefined) client.id = client._assignedClientId = assignClientId()
    // [MQTT-3.1.3-5] aedes checks the length for MQTT 3.1 only
    if (client.id.length > this.settings.maxClientIdLen) return cb(connectError(2, 'client id too long'))
    // mqtt.max_keepalive: a 3.1/3.1.1 client above it cannot be told to use less; 0x02, as Mosquitto 2 answers
    const keepaliveRefused = stateOf(client)?.keepaliveRefused
    if (keepaliveRefused !== undefined) {
      this.c.logger.info({ clientId: client.id }, `CONNECT refused: ${keepaliveRefused}`)
      return cb(connectError(2, 'keep alive above mqtt.max_keepalive'))
    }
    const wire = wireOf(client)
    const access = this.accessClient(client)
    const info: AuthInfo = {
      clientId: client.id,
      username,
      password,
      peerhost: wire?.peer.address ?? '',
      peer: wire ? `${wire.peer.address}:${wire.peer.port}` : '',
      sockport: access.sockport,
      listener: access.listener,
      certCn: access.certCn,
      certDn: access.certDn
    }
    const { zone } = this.zoneOf(client)
    const bannedFor = zone.enableBan ? (this.banned?.check(this.accessClient(client)) ?? null) : null
    if (bannedFor !== null) {
      // v5 CONNACK 0x8A (Banned); aedes only knows the v3 return codes, so the wire patches it
      if (wire) wire.connackCode = 0x8a
      this.c.logger.debug({ clientId: client.id, reason: bannedFor }, 'banned client refused')
      return cb(connectError(5, 'banned'))
    }
    this.runAuthChain(client, info, access, zone.bypassAuthPlugins ? NO_AUTHENTICATORS : this.authenticators, 0, zone.allowAnonymous, cb)
  }

  /**
   * Asks the auth chain from `providers[i]` on; a provider that answers at once (no promise)
   * is not waited for, so a CONNECT with no asynchronous provider is decided in this turn.
   */
  private runAuthChain (client: any, info: AuthInfo, access: AccessClient, providers: readonly Authenticator[], i: number,
    allowAnonymous: boolean, cb: AuthCallback): void {
    const metrics = this.c.metrics
    for (; i < providers.length; i++) {
      let answer: ReturnType<Authenticator['authenticate']>
      try {
        answer = providers[i].authenticate(info)
      } catch (err) {
        return this.authFailed(client, err, cb)
      }
      if (isPromise(answer)) {
        const next = i + 1
        answer.then((settled) => {
          if (this.authAnswered(client, settled, info.username, access, cb)) return
          this.runAuthChain(client, info, access, providers, next, allowAnonymous, cb)
        }, (err: unknown) => { this.authFailed(client, err, cb) }).catch(this.continuationFailed)
        return
      }
      if (this.authAnswered(client, answer, info.username, access, cb)) return
    }
    // every provider ignored the client (or there is none): allow_anonymous decides
    metrics['client.auth.ignore']++
    if (allowAnonymous) return this.accept(client, cb)
    metrics['client.auth.failure']++
    cb(connectError(5, 'not authorized'))
  }

  /** One provider's answer: true when it decided (the client accepted or refused). */
  private authAnswered (client: any, answer: AuthVerdict | AuthResult, username: string | undefined, access: AccessClient,
    cb: AuthCallback): boolean {
    const verdict = typeof answer === 'string' ? answer : answer.verdict
    if (verdict === 'allow') {
      this.c.metrics['client.auth.success']++
      access.superuser = typeof answer !== 'string' && answer.superuser === true
      this.accept(client, cb)
      return true
    }
    if (verdict === 'deny') {
      this.c.metrics['client.auth.failure']++
      cb(connectError(username === undefined ? 5 : 4, 'bad user name or password'))
      return true
    }
    return false
  }

  private authFailed (client: any, err: unknown, cb: AuthCallback): void {
    this.c.logger.warn({ err, clientId: client.id }, 'authentication failed with an error')
    cb(connectError(3, 'server unavailable'))
  }

  /**
   * An authenticated client: the accept hooks (in order, a hook that returns no promise not
   * waited for), then its mountpoint and session, then `cb(null, true)`.
   */
  private accept (client: any, cb: AuthCallback): void {
    // a connected client with this id is about to be taken over [MQTT-3.1.4-2]
    const previous = wireOf(this.aedes.clients[client.id])
    if (previous !== undefined) previous.closeReason = 'takeovered'
    this.runAcceptHooks(client, this.acceptHooks, 0, cb)
  }

  private runAcceptHooks (client: any, hooks: AcceptHooks, i: number, cb: AuthCallback): void {
    const cleanStart = stateOf(client)?.cleanStart !== false
    for (; i < hooks.length; i++) {
      let pending: Promise<void> | void
      try {
        pending = hooks[i](client.id, cleanStart)
      } catch (err) {
        this.acceptHookFailed(client, err)
        continue
      }
      if (isPromise(pending)) {
        const next = i + 1
        pending.then(() => { this.runAcceptHooks(client, hooks, next, cb) },
          (err: unknown) => { this.acceptHookFailed(client, err); this.runAcceptHooks(client, hooks, next, cb) }).catch(this.continuationFailed)
        return
      }
    }
    const wire = wireOf(client)
    try {
      this.mountClient(client, wire, this.zoneOf(client).zone)
      if (this.sessions?.resume(client) === true && wire) wire.sessionPresent = true
    } catch (err) {
      // as when this ran in the auth chain's async function: refused, not thrown into aedes
      this.authFailed(client, err, cb)
      return
    }
    cb(null, true)
  }

  /** The CONNECT's next steps threw after an awaited provider or hook: logged, not an unhandled rejection. */
  private readonly continuationFailed = (err: unknown): void => {
    this.c.logger.error({ err }, 'accepting a client failed')
  }

  private acceptHookFailed (client: any, err: unknown): void {
    this.c.logger.warn({ err, clientId: client.id }, 'a hook before accepting the client failed (cluster takeover); accepting the connection without the old session')
  }

  private authorizePublish (client: any, packet: any, cb: (err?: Error | null) => void): void {
    if (packet.topic.startsWith('$SYS/')) return cb(new Error('$SYS topics are published by the broker only'))
    const zone = client ? this.zoneOf(client) : undefined
    const maxLevels = zone?.settings.maxTopicLevels ?? this.settings.maxTopicLevels
    if (maxLevels > 0 && topicLevels(packet.topic) > maxLevels) return cb(new Error(`topic has more than ${maxLevels} levels (mqtt.max_topic_levels)`))
    if (client && this.acl !== null && zone?.zone.enableAcl === true) {
      const decision = this.acl.check(this.accessClient(client), 'publish', packet.topic)
      if (decision === 'deny') return this.denyPublish(client, packet, cb)
      if (decision !== 'allow') {
        // a backend is asked (not cached): aedes waits for the callback, in order per client
        waitsOnBackend(client)
        decision.then(d => d === 'deny' ? this.denyPublish(client, packet, cb) : this.publishAllowed(client, packet, cb),
          (err: Error) => { this.c.logger.warn({ err, clientId: client.id }, 'ACL check failed; publish denied'); this.denyPublish(client, packet, cb) })
        return
      }
    }
    this.publishAllowed(client, packet, cb)
  }

  /** The rest of {@link authorizePublish} once the ACL allowed the publish. */
  private publishAllowed (client: any, packet: any, cb: (err?: Error | null) => void): void {
    // the mountpoint goes on after the ACL, which sees the client's own topic (as EMQ X)
    const mountpoint = stateOf(client)?.mountpoint
    if (mountpoint !== undefined) packet.topic = mountTopic(mountpoint, packet.topic)
    if (client && packet.qos === 2 && this.sessionLimits.refusesAwaitingRel(wireOf(client), client, packet)) return cb(null)
    if (client && packet.qos === 1) {
      // Hold this client's output (its PUBACK) until the publish completes, i.e. until the
      // message is stored for persistent sessions: aedes writes the PUBACK first. QoS 2 needs
      // no hold: aedes sends PUBREC after the publish, and a retransmitted QoS 2 PUBLISH it
      // already has is answered without publishing again (no `published` call to release it).
      const wire = wireOf(client)
      if (wire) { wire.holds++; packet[HELD] = wire }
    }
    cb(null)
  }

  private authorizeSubscribe (client: any, sub: any, cb: (err: Error | null, sub: any) => void): void {
    const topic: string = sub.topic
    const wire = wireOf(client)
    // refused on the wire (invalid filter, feature off): the SUBACK code is already recorded
    if (wire?.isRefused(topic)) return cb(null, null)
    if (this.acl !== null && this.zoneOf(client).zone.enableAcl) {
      const decision = this.acl.check(this.accessClient(client), 'subscribe', displayFilter(topic))
      if (decision === 'deny') return this.denySubscribe(client, topic, cb)
      if (decision !== 'allow') {
        waitsOnBackend(client)
        decision.then(d => d === 'deny' ? this.denySubscribe(client, topic, cb) : this.subscribeAllowed(client, sub, cb),
          (err: Error) => { this.c.logger.warn({ err, clientId: client.id }, 'ACL check failed; subscribe denied'); this.denySubscribe(client, topic, cb) })
        return
      }
    }
    this.subscribeAllowed(client, sub, cb)
  }

  private denySubscribe (client: any, topic: string, cb: (err: Error | null, sub: any) => void): void {
    // spec: ACL denial answers 0x80 for MQTT 3.1.1 and 5 alike (aedes would say 0x87)
    wireOf(client)?.setSubackCode(topic, 0x80)
    if (this.denyActionOf(client) === 'disconnect') this.disconnectDenied(client)
    cb(null, null)
  }

  /** The rest of {@link authorizeSubscribe} once the ACL allowed the subscription. */
  private subscribeAllowed (client: any, sub: any, cb: (err: Error | null, sub: any) => void): void {
    const topic: string = sub.topic
    const wire = wireOf(client)
    if (this.sessionLimits.quota.refuses(client, topic)) {
      wire?.setSubackCode(topic, client.version === 5 ? 0x97 : 0x80) // Quota exceeded (mqtt.max_subscriptions)
      return cb(null, null)
    }
    const { maxQos } = this.zoneOf(client).settings
    if (sub.qos > maxQos) {
      sub.qos = maxQos
      wire?.setSubackCode(topic, sub.qos)
    }
    const mountpoint = stateOf(client)?.mountpoint
    if (mountpoint !== undefined) sub.topic = mountFilter(mountpoint, topic)
    cb(null, sub)
  }

  /**
   * A publish the ACL denies is dropped and counted. MQTT 5 QoS 1/2 gets PUBACK/PUBREC 0x87
   * (aedes does that for an authorizer error); MQTT 3.1.1 has no reason codes and aedes would
   * close the connection, so the message is dropped and acknowledged here as EMQ X does.
   */
  private denyPublish (client: any, packet: any, cb: (err?: Error | null) => void): void {
    this.c.metrics['messages/dropped']++
    if (this.denyActionOf(client) === 'disconnect') {
      this.disconnectDenied(client)
      packet._notAuthorized = true
      return cb(null)
    }
    if (client.version === 5) return cb(new Error('not authorized by the ACL'))
    packet._notAuthorized = true // aedes' own flag: enqueuePublish skips the message
    const wire = wireOf(client)
    if (wire && packet.qos > 0) {
      const ack = Buffer.from([packet.qos === 1 ? 0x40 : 0x50, 2, packet.messageId >> 8, packet.messageId & 0xff])
      wire.writeFrame(ack)
    }
    cb(null)
  }

  /** `acl_deny_action` for `client`: its zone's when the zone sets one, else the node's. */
  private denyActionOf (client: any): 'ignore' | 'disconnect' {
    return this.zoneOf(client).zone.aclDenyAction ?? this.aclDenyAction
  }

  /**
   * Gives an accepted client its mountpoint (its listener's, else its zone's, `%c` and `%u`
   * expanded) and mounts its will message's topic, as EMQ X did.
   */
  private mountClient (client: any, wire: Wire | undefined, zone: ZoneSettings): void {
    const state = stateOf(client)
    if (state === undefined) return
    const template = wire?.origin?.mountpoint !== undefined && wire.origin.mountpoint !== '' ? wire.origin.mountpoint : zone.mountpoint
    const mountpoint = expandMountpoint(template, client.id, state.username)
    state.mountpoint = state.access.mountpoint = mountpoint === '' ? undefined : mountpoint
    if (state.mountpoint !== undefined && client._will?.topic !== undefined) client._will.topic = mountTopic(state.mountpoint, client._will.topic)
  }

  private disconnectDenied (client: any): void {
    const wire = wireOf(client)
    if (wire) wire.closeReason = 'acl_denied'
    queueMicrotask(() => client.disconnect({ reasonCode: 0x87 }))
  }

  private published (packet: any, client: any, cb: (err?: Error | null) => void): void {
    const wire: Wire | undefined = packet[HELD]
    if (wire !== undefined) {
      packet[HELD] = undefined
      wire.release()
    }
    if (client) {
      const m = this.c.metrics
      m['messages/received']++
      m[QOS_RECEIVED_METRIC[packet.qos]]++
      if (packet.retain) m['messages/retained']++
    }
    cb(null)
  }

  /** aedes' own `$SYS/<id>/...` bookkeeping messages: never client-visible, never events. */
  private isInternal (topic: string): boolean {
    return topic.startsWith(this.router.internalPrefix)
  }

  /** A message on its way to `client` (called by the forward filter, after its checks). */
  private delivered (client: any, packet: any): void {
    const hooks = this.c.hooks
    if (packet.qos > 0 && hooks.has('message.acked')) this.notePublisher(client, packet)
    if (!hooks.has('message.deliver')) return
    const state = stateOf(client)
    const event = messageEvent('message.deliver', this.settings.nodeName, packet, null)
    // the publisher, when it is a client of this node (EMQ X 4's from_username and headers)
    const publisher = packet.clientId === undefined ? undefined : stateOf(this.aedes.clients[packet.clientId])
    hooks.emit('message.deliver', {
      ...event,
      client_id: client.id,
      username: state?.username,
      peername: state?.peername ?? '',
      peerhost: state?.peerhost ?? '',
      from_client_id: packet.clientId,
      from_username: publisher?.username,
      from_peerhost: publisher?.peerhost,
      auth_result: 'success',
      mountpoint: state?.mountpoint
    })
  }

  private readonly ackPublishers = new AckPublishers()

  /** Keeps who published a QoS 1/2 delivery until its acknowledgement (`message.acked`). */
  private notePublisher (client: any, packet: any): void {
    const wire = wireOf(client)
    if (wire === undefined) return
    const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload
    const clientId: string | undefined = packet.clientId
    const username = clientId === undefined ? undefined : stateOf(this.aedes.clients[clientId])?.username
    this.ackPublishers.note(wire, { topic: packet.topic, payload, clientId, username })
  }

  /** A message no one received: counted, and `message.dropped` with the reason. */
  dropped (packet: any, reason: string): void {
    // the broker's own $SYS publications with no subscriber are not client messages dropped
    if (this.isInternal(packet.topic) || (packet.clientId === undefined && packet.topic.startsWith('$SYS/'))) return
    this.c.metrics['messages/dropped']++
    countDropReason(this.c.metrics, reason)
    const hooks = this.c.hooks
    if (!hooks.has('message.dropped')) return
    const event = messageEvent('message.dropped', this.settings.nodeName, packet, this.aedes.clients[packet.clientId] ?? null)
    hooks.emit('message.dropped', { ...event, reason })
  }

  /** Lets wires report acknowledged QoS 1/2 deliveries while someone listens for them. */
  private readonly ackWatch = {
    enabled: (): boolean => this.c.hooks.has('message.acked'),
    acked: (wire: Wire, message: SentMessage): void => {
      const client = (wire.socket as any).client
      if (!client?.id) return
      const state = stateOf(client)
      const now = Date.now()
      const publisher = this.ackPublishers.take(wire, message.topic, message.payload)
      this.c.hooks.emit('message.acked', {
        event: 'message.acked',
        id: `${client.id}:${message.id}`,
        client_id: client.id,
        username: state?.username,
        topic: message.topic,
        payload: message.payload,
        qos: message.qos as 0 | 1 | 2,
        peername: state?.peername ?? '',
        peerhost: state?.peerhost ?? '',
        flags: { retain: message.retain, dup: false },
        pub_props: {},
        publish_received_at: now,
        timestamp: now,
        node: this.settings.nodeName,
        from_client_id: publisher?.clientId,
        from_username: publisher?.username,
        auth_result: 'success',
        mountpoint: state?.mountpoint
      })
    }
  }
}

/** Run once a CONNECT is authenticated (see {@link Broker.addAcceptHook}): the client id, and whether it starts clean. */
export type AcceptHook = (clientId: string, cleanStart: boolean) => Promise<void> | undefined
type AcceptHooks = readonly AcceptHook[]

/** aedes' authenticate callback: an error (with the CONNACK return code) or the verdict. */
type AuthCallback = (err: (Error & { returnCode?: number }) | null, ok?: boolean) => void

const NO_AUTHENTICATORS: readonly Authenticator[] = []

/** The CONNECT properties of a client that sent none (every MQTT 3.1.1 client): one object for all. */
const NO_PROPERTIES: Record<string, unknown> = Object.freeze({})

function isPromise<T> (value: T | Promise<T>): value is Promise<T> {
  return typeof (value as any)?.then === 'function'
}

const WIRE = Symbol('starling.wire')
const HELD = Symbol('starling.held')

/**
 * `client`'s packets wait on something slow (an ACL backend asked, a publish held for a data
 * action's write): its read leaves the node's read budget (read-gate.ts), which is for
 * floods, so that a slow backend does not stop the node reading everyone else.
 */
function waitsOnBackend (client: any): void {
  const wire = wireOf(client)
  if (wire !== undefined) releaseRead(wire)
}

/** The wire of an aedes client (its `conn` is the socket the wire interposes on). */
export function wireOf (client: any): Wire | undefined {
  return client?.conn?.[WIRE]
}

function connectError (returnCode: number, message: string): Error & { returnCode: number } {
  return Object.assign(new Error(message), { returnCode })
}

/**
 * The CN and whole subject DN of the TLS client certificate on `socket` (the auth
 * placeholders `%C` and `%d`), or nothing without one. The DN is written as OpenSSL's
 * one-line form, most significant first (`C=SE, O=Example, CN=device-1`).
 */
function certificateNames (socket: TLSSocket | undefined): { certCn?: string, certDn?: string } {
  const cert = socket?.getPeerCertificate?.()
  if (cert === undefined || cert === null || cert.subject === undefined) return {}
  const subject = cert.subject as unknown as Record<string, string | string[]>
  const parts: string[] = []
  for (const [key, value] of Object.entries(subject)) {
    for (const v of Array.isArray(value) ? value : [value]) parts.push(`${key}=${v}`)
  }
  const cn = subject.CN
  return { certCn: Array.isArray(cn) ? cn[0] : cn, certDn: parts.join(', ') }
}

/**
 * A TCP or TLS socket always emits 'close' once destroyed, so the broker's listener closes
 * the aedes client; a WebSocket stream keeps aedes' own stream.finished.
 */
function ownsClose (origin: ConnectionOrigin): boolean {
  return origin.protocol === 'mqtt:tcp' || origin.protocol === 'mqtt:ssl'
}
