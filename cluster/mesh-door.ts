/**
 * The cluster port before and after libp2p (issue 22, idle memory; docs/cluster.md "A
 * standalone node"): a plain `net.Server` bound on `cluster.listen` when the node starts.
 * libp2p with its services is about 50 MiB of a node's memory, and a standalone node that
 * nobody joins never needs it; so the mesh starts it (cluster/mesh-host.ts) only when the
 * door is knocked on (the first connection), when this node dials (a join, a seed, a stored
 * member), or at start when the member book has members.
 *
 * The door is the cluster port's only server for the node's whole run: libp2p's TCP listener
 * is this server, adopted (cluster/door-listener.ts), so no dial is lost in a hand-over. A
 * connection that arrives before libp2p runs waits, paused, and is given to it once it does
 * (the dialler's private-network handshake is waiting for this node's nonce meanwhile).
 *
 * Invariants:
 * - the port is bound from `listen` until `close`, never re-bound;
 * - every accepted socket goes to the adopter, in order, or is destroyed: while none adopted
 *   the door holds at most {@link MAX_WAITING} of them (more are refused at once) and none
 *   longer than {@link WAIT_MS}.
 */
import { EventEmitter } from 'node:events'
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net'

/** Connections held while libp2p starts (as many as libp2p lets be in their handshake). */
const MAX_WAITING = 256
/** A connection held longer than this (libp2p failed to start, or is slow) is dropped. */
const WAIT_MS = 10_000

/** The door's events. */
export interface MeshDoorEvents {
  /** The first connection arrived while nobody had adopted the door. */
  knock: []
}

/** The cluster port's server (see the module's comment). */
export class MeshDoor extends EventEmitter<MeshDoorEvents> {
  private readonly server: Server
  private waiting: Array<{ socket: Socket, timer: NodeJS.Timeout }> = []
  /** Errors of waiting sockets (a reset) end them without an unhandled 'error'. */
  private readonly ignore = (): void => {}
  private adopter: ((socket: Socket) => void) | null = null
  private knocked = false

  constructor () {
    super()
    // the options libp2p's TCP listener gives its own server (@libp2p/tcp: keepAlive and
    // noDelay on, no half-open sockets)
    this.server = createServer({ keepAlive: true, noDelay: true, allowHalfOpen: false, pauseOnConnect: true }, (socket) => { this.arrived(socket) })
  }

  /** Binds `host:port` (0: any free port); rejects with the system error (EADDRINUSE ...). */
  async listen (host: string, port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject)
      this.server.listen({ host, port }, () => { this.server.off('error', reject); resolve() })
    })
  }

  /** The bound port. */
  get port (): number { return (this.server.address() as AddressInfo).port }

  /** True once something took the door's connections ({@link adopt}). */
  get adopted (): boolean { return this.adopter !== null }

  /**
   * From now on every connection goes to `take` (resumed), the ones waiting first, in the
   * order they arrived. One adopter at a time; {@link release} gives the door back.
   */
  adopt (take: (socket: Socket) => void): void {
    this.adopter = take
    const waiting = this.waiting
    this.waiting = []
    for (const { socket, timer } of waiting) {
      clearTimeout(timer)
      if (!socket.destroyed) this.handOver(socket)
    }
  }

  /**
   * The adopter stopped taking connections (or never started: the connections waiting for
   * it are dropped); new ones are held again, and the next is a knock again.
   */
  release (): void {
    this.adopter = null
    this.knocked = false
    for (const { socket, timer } of this.waiting) { clearTimeout(timer); socket.destroy() }
    this.waiting = []
  }

  /** Closes the port and drops the connections waiting. */
  async close (): Promise<void> {
    this.release()
    if (!this.server.listening) return
    await new Promise<void>(resolve => { this.server.close(() => { resolve() }) })
  }

  private arrived (socket: Socket): void {
    if (this.adopter !== null) { this.handOver(socket); return }
    if (this.waiting.length >= MAX_WAITING) { socket.destroy(); return }
    // a reset while it waits destroys the socket: it is skipped when handed over
    socket.on('error', this.ignore)
    const timer = setTimeout(() => {
      socket.destroy()
      this.waiting = this.waiting.filter(w => w.socket !== socket)
    }, WAIT_MS)
    timer.unref()
    this.waiting.push({ socket, timer })
    if (!this.knocked) { this.knocked = true; this.emit('knock') }
  }

  private handOver (socket: Socket): void {
    socket.off('error', this.ignore)
    this.adopter!(socket)
    socket.resume()
  }
}

/**
 * Opens a TCP connection to `host:port` and closes it at once, ignoring any failure: a
 * standalone node there starts libp2p at it. A node that dials before its own libp2p runs
 * knocks first, so both load libp2p at the same time rather than one after the other.
 */
export function knock (host: string, port: number): void {
  const socket = createConnection({ host, port, timeout: 1000 })
  socket.once('connect', () => { socket.destroy() })
  socket.once('timeout', () => { socket.destroy() })
  socket.once('error', () => { socket.destroy() })
}
