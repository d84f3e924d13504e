/**
 * libp2p's TCP transport with the cluster door (cluster/mesh-door.ts) as its listener:
 * `doorTcp(door)` dials as `@libp2p/tcp` does (it is that transport) and, instead of binding
 * a server of its own, takes the door's connections, the ones that waited while libp2p
 * started first. Loaded with libp2p (cluster/mesh-host.ts), never by an idle node.
 *
 * What a taken socket becomes is what `@libp2p/tcp` 11 makes of an inbound socket
 * (`socket-to-conn.ts`, not exported by the package): a multiaddr connection with the same
 * inactivity timeout, reset and close, upgraded by libp2p's upgrader (private network, noise,
 * yamux, its limits on connections in their handshake).
 */
import type { Socket } from 'node:net'
import { tcp } from '@libp2p/tcp'
import { AbstractMultiaddrConnection, getThinWaistAddresses, ipPortToMultiaddr, type AbstractMultiaddrConnectionInit, type SendResult } from '@libp2p/utils'
import type { AbortOptions, ComponentLogger, CreateListenerOptions, Listener, ListenerEvents, Logger as Libp2pLogger, Transport, Upgrader } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'
import type { MeshDoor } from './mesh-door.js'

/** Idle time after which an inbound socket is closed (`@libp2p/tcp`'s default). */
const INACTIVITY_MS = 2 * 60 * 1000

/** What `sendData` is given (`@libp2p/utils`' own `Uint8ArrayList`). */
type Outgoing = Parameters<AbstractMultiaddrConnection['sendData']>[0]

/** An accepted socket as libp2p's upgrader takes it (the shape of `@libp2p/tcp`'s). */
class SocketConnection extends AbstractMultiaddrConnection {
  constructor (private readonly socket: Socket, init: Pick<AbstractMultiaddrConnectionInit, 'log' | 'remoteAddr'>) {
    super({ ...init, direction: 'inbound' })
    socket.on('data', (data: Buffer) => { this.onData(data) })
    socket.on('error', (err) => { this.abort(err) })
    socket.setTimeout(INACTIVITY_MS)
    socket.once('timeout', () => { this.abort(new Error('the cluster connection was idle too long')) })
    // half-open sockets are off: Node answers the peer's FIN and 'close' follows
    socket.once('end', () => { this.onTransportClosed() })
    socket.once('close', (hadError) => {
      if (hadError) this.abort(new Error('TCP transmission error'))
      else this.onTransportClosed()
    })
    socket.on('drain', () => { this.safeDispatchEvent('drain') })
  }

  sendData (data: Outgoing): SendResult {
    let sentBytes = 0
    let canSendMore = true
    for (const buf of data) {
      sentBytes += buf.byteLength
      canSendMore = this.socket.write(buf)
      if (!canSendMore) break
    }
    return { sentBytes, canSendMore }
  }

  async sendClose (options?: AbortOptions): Promise<void> {
    if (this.socket.destroyed) return
    const closed = new Promise<void>((resolve, reject) => {
      const aborted = (): void => { reject(options?.signal?.reason ?? new Error('aborted')) }
      options?.signal?.addEventListener('abort', aborted, { once: true })
      this.socket.once('close', () => { options?.signal?.removeEventListener('abort', aborted); resolve() })
    })
    this.socket.destroySoon()
    await closed
  }

  sendReset (): void {
    // resetAndDestroy cannot follow a graceful end (libuv's shutdown)
    if (this.socket.writableEnded) this.socket.destroy()
    else this.socket.resetAndDestroy()
  }

  sendPause (): void { this.socket.pause() }
  sendResume (): void { this.socket.resume() }
}

/** The door as a libp2p listener: `listen` takes the door's connections, `close` gives them back. */
class DoorListener extends EventTarget implements Listener {
  private readonly sockets = new Set<Socket>()
  private listeningOn: Multiaddr | undefined
  private readonly shutdown = new AbortController()

  constructor (private readonly door: MeshDoor, private readonly upgrader: Upgrader, private readonly log: Libp2pLogger, private readonly logger: ComponentLogger) {
    super()
  }

  async listen (ma: Multiaddr): Promise<void> {
    this.listeningOn = ma
    this.door.adopt((socket) => { this.take(socket) })
    this.safeDispatchEvent('listening')
  }

  getAddrs (): Multiaddr[] {
    return this.listeningOn === undefined ? [] : getThinWaistAddresses(this.listeningOn, this.door.port)
  }

  updateAnnounceAddrs (): void {}

  async close (): Promise<void> {
    this.door.release()
    this.shutdown.abort()
    await Promise.all([...this.sockets].map(async socket => {
      if (socket.destroyed) return
      await new Promise<void>(resolve => { socket.once('close', () => { resolve() }); socket.destroy() })
    }))
    this.safeDispatchEvent('close')
  }

  listenerCount (type: string): number {
    return this.counts.get(type) ?? 0
  }

  private readonly counts = new Map<string, number>()

  override addEventListener (...args: Parameters<EventTarget['addEventListener']>): void {
    if (args[1] !== null) this.counts.set(args[0], this.listenerCount(args[0]) + 1)
    super.addEventListener(...args)
  }

  override removeEventListener (...args: Parameters<EventTarget['removeEventListener']>): void {
    if (args[1] !== null) this.counts.set(args[0], Math.max(0, this.listenerCount(args[0]) - 1))
    super.removeEventListener(...args)
  }

  safeDispatchEvent<Detail> (type: keyof ListenerEvents, init?: { detail?: Detail }): boolean {
    return this.dispatchEvent(new CustomEvent(type, init))
  }

  private take (socket: Socket): void {
    if (socket.remoteAddress === undefined || socket.remotePort === undefined) { socket.destroy(); return }
    const log = this.logger.forComponent('libp2p:tcp:connection')
    let maConn: SocketConnection
    try {
      maConn = new SocketConnection(socket, { log, remoteAddr: ipPortToMultiaddr(socket.remoteAddress, socket.remotePort) })
    } catch (err) {
      this.log.error('inbound connection failed - %e', err)
      socket.destroy()
      return
    }
    this.sockets.add(socket)
    socket.once('close', () => { this.sockets.delete(socket) })
    this.upgrader.upgradeInbound(maConn, { signal: this.shutdown.signal }).catch((err: Error) => {
      this.log.error('inbound connection upgrade failed - %e', err)
      maConn.abort(err)
    })
  }
}

/**
 * `@libp2p/tcp`'s transport whose listener is `door`: dials, filters and options are that
 * transport's; only where inbound connections come from differs.
 */
export function doorTcp (door: MeshDoor): (components: { logger: ComponentLogger }) => Transport {
  const inner = tcp()
  return (components) => {
    const transport = inner(components as Parameters<typeof inner>[0])
    const log = components.logger.forComponent('starling:cluster:door')
    return Object.assign(Object.create(transport) as Transport, {
      createListener: (options: CreateListenerOptions): Listener => new DoorListener(door, options.upgrader, log, components.logger)
    })
  }
}
