/**
 * libp2p for the cluster mesh (cluster/mesh.ts) and the RPC bridges' dialler
 * (cluster/bridge-transport.ts): every import of libp2p, its services and the private
 * network is here, and this module is imported only when a node first needs the mesh
 * (cluster/mesh-door.ts says when), so an idle standalone node never loads them.
 */
import './polyfills.js'
import { readFileSync, writeFileSync, existsSync } from 'node:fs'
import { createLibp2p, type Libp2p } from 'libp2p'
import { tcp } from '@libp2p/tcp'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { identify } from '@libp2p/identify'
import { gossipsub } from '@libp2p/gossipsub'
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import { multiaddr } from '@multiformats/multiaddr'
import type { Stream, Connection, PrivateKey } from '@libp2p/interface'
import { privateNetwork } from './private-network.js'
import { doorTcp } from './door-listener.js'
import type { MeshDoor } from './mesh-door.js'

/** Inbound connections accepted per second from one host (libp2p's default is 5). */
const INBOUND_CONNECTIONS_PER_SECOND = 100
/** Inbound connections in their handshake at once (libp2p's default is 10). */
const INBOUND_PENDING_CONNECTIONS = 256

/** A stream handler: a stream of a protocol this node accepts, on its connection. */
export type StreamHandler = (stream: Stream, connection: Connection) => void

/** What the mesh and the bridges use of a libp2p instance. */
export interface MeshHost {
  /** The instance's peer id, for the log. */
  readonly peerId: string
  /** Opens a stream of `protocol` to the node at `address` (a multiaddr, cluster/mesh.ts `multiaddrOf`), dialling it unless connected. */
  open: (address: string, protocol: string, signal: AbortSignal) => Promise<{ stream: Stream, connection: Connection }>
  /** Accepts streams of `protocol`. */
  handle: (protocol: string, handler: StreamHandler, maxInboundStreams: number, maxOutboundStreams?: number) => Promise<void>
  /** Subscribes to a gossipsub topic; `receive` gets each message's data. */
  subscribe: (topic: string, receive: (data: Uint8Array) => void) => void
  /** Publishes on a gossipsub topic. */
  publish: (topic: string, data: Uint8Array) => Promise<void>
  /** The peers gossipsub exchanges messages with. */
  gossipPeers: () => string[]
  stop: () => Promise<void>
}

/** What the mesh's libp2p is made of. */
export interface MeshHostInit {
  /** The cluster port's server, which libp2p takes its inbound connections from. */
  door: MeshDoor
  /** The address libp2p announces it listens on (`cluster.listen`'s host, the door's port). */
  listen: string
  /** The private network's swarm key (cluster/mesh.ts `pskFromCookie`). */
  psk: Uint8Array
  /** File the node's libp2p key is kept in (identity survives restarts). */
  keyFile: string
}

async function loadKey (file: string): Promise<PrivateKey> {
  if (existsSync(file)) return privateKeyFromProtobuf(readFileSync(file))
  const key = await generateKeyPair('Ed25519')
  writeFileSync(file, privateKeyToProtobuf(key), { mode: 0o600 })
  return key
}

/** The mesh's libp2p: the door's connections, gossipsub for control state, started. */
export async function startMeshHost (init: MeshHostInit): Promise<MeshHost> {
  const libp2p = await createLibp2p({
    privateKey: await loadKey(init.keyFile),
    addresses: { listen: [init.listen] },
    transports: [doorTcp(init.door)],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionProtector: privateNetwork({ psk: init.psk }),
    connectionMonitor: { abortConnectionOnPingFailure: false },
    // libp2p refuses (resets) a sixth connection per second from one host by default; the
    // members of a cluster on one host, and RPC bridges from another cluster's nodes behind
    // one address, reconnect faster than that after a restart (clean-clone CI: ECONNRESET)
    // and it refuses every inbound connection while maxIncomingPendingConnections are in their
    // handshake (default 10): ten silent connections shut the port for 10 s (the fuzzer's
    // cluster door). More slots, and the private network drops a peer with no nonce after 1 s.
    connectionManager: { maxConnections: 1000, inboundConnectionThreshold: INBOUND_CONNECTIONS_PER_SECOND, maxIncomingPendingConnections: INBOUND_PENDING_CONNECTIONS },
    services: {
      identify: identify(),
      pubsub: gossipsub({ allowPublishToZeroTopicPeers: true, emitSelf: false, floodPublish: true })
    }
  })
  const pubsub = libp2p.services.pubsub
  return {
    ...hostOf(libp2p),
    subscribe: (topic, receive) => {
      pubsub.subscribe(topic)
      pubsub.addEventListener('message', (event: any) => {
        const message = event.detail?.msg ?? event.detail
        if (message?.topic === topic) receive(message.data)
      })
    },
    publish: async (topic, data) => { await pubsub.publish(topic, data) },
    gossipPeers: () => pubsub.getPeers().map(p => p.toString())
  }
}

/**
 * The RPC bridges' dialler: no listener and no services but identify, so the remote node's
 * gossipsub and mesh never take it for a member (cluster/bridge-transport.ts).
 */
export async function startBridgeDialer (psk: Uint8Array): Promise<MeshHost> {
  const libp2p = await createLibp2p({
    privateKey: await generateKeyPair('Ed25519'),
    addresses: { listen: [] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionProtector: privateNetwork({ psk }),
    connectionMonitor: { abortConnectionOnPingFailure: false },
    services: { identify: identify() }
  })
  return { ...hostOf(libp2p), subscribe: () => {}, publish: async () => {}, gossipPeers: () => [] }
}

function hostOf (libp2p: Libp2p<any>): Pick<MeshHost, 'peerId' | 'open' | 'handle' | 'stop'> {
  return {
    peerId: libp2p.peerId.toString(),
    open: async (address, protocol, signal) => {
      const connection = await libp2p.dial(multiaddr(address), { signal })
      const stream = await connection.newStream(protocol, { signal })
      return { stream, connection }
    },
    handle: async (protocol, handler, maxInboundStreams, maxOutboundStreams) => {
      await libp2p.handle(protocol, handler, maxOutboundStreams === undefined ? { maxInboundStreams } : { maxInboundStreams, maxOutboundStreams })
    },
    stop: async () => { await libp2p.stop() }
  }
}
