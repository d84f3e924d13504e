/**
 * MQTT helpers for end-to-end suites that need more than {@link connect}: clients whose
 * CONNACK, messages, DISCONNECT and close a test inspects, CONNACKs of refused connections,
 * SUBACK and PUBACK reason codes, and raw sockets that send exactly the packets a test writes
 * (what mqtt.js refuses to send, or would complete on its own).
 *
 * Every client and socket opened here is recorded; call {@link closeOpened} in `afterEach`
 * (beside `closeClients` from ./node.js) so that none outlives its test.
 */
import net from 'node:net'
import mqtt, { type IClientOptions, type IClientSubscribeOptions, type ISubscriptionMap, type MqttClient } from 'mqtt'
import mqttPacket from 'mqtt-packet'
import type { StarlingNode } from '../../node/node.js'
import { collect, startTestNode, waitFor, type Received, type TestNode } from './node.js'

/** mqtt.js clients opened by {@link open} or {@link refusedConnack}, ended by {@link closeOpened}. */
const opened = new Set<MqttClient>()
/** Sockets opened by {@link openRaw}, destroyed by {@link closeOpened}. */
const raws = new Set<net.Socket>()

/** The options every client here starts from: the node's TCP listener, no reconnects. */
function clientOptions (node: StarlingNode, opts: IClientOptions): IClientOptions {
  return { host: '127.0.0.1', port: node.port('mqtt:tcp'), reconnectPeriod: 0, connectTimeout: 5000, ...opts }
}

/**
 * A client opened by {@link open}: its CONNACK, every message from the first packet on, the
 * DISCONNECT the broker sent it (`null` while none) and whether its connection has closed.
 */
export interface Opened {
  client: MqttClient
  connack: any
  messages: Received[]
  disconnect: () => any
  closed: () => boolean
}

/**
 * Connects an mqtt.js client to `node` with its message collector attached before CONNACK,
 * so queued messages that arrive in the same read as the CONNACK are not missed. Rejects when
 * the connection fails or closes before CONNACK. Errors after CONNACK are swallowed: a test
 * that expects the broker to drop the client asserts on `closed()` and `disconnect()`.
 */
export async function open (node: StarlingNode, opts: IClientOptions = {}): Promise<Opened> {
  const client = mqtt.connect(clientOptions(node, opts))
  opened.add(client)
  const messages = collect(client)
  let disconnect: any = null
  let closed = false
  client.on('disconnect', (p) => { disconnect = p })
  client.on('close', () => { closed = true })
  client.on('error', () => {})
  const connack = await new Promise<any>((resolve, reject) => {
    client.once('connect', resolve)
    client.once('error', reject)
    client.once('close', () => reject(new Error('connection closed before CONNACK')))
  })
  return { client, connack, messages, disconnect: () => disconnect, closed: () => closed }
}

/**
 * Connects and resolves with the CONNACK of a connection the broker refuses (and closes):
 * `reasonCode` for MQTT 5, `returnCode` for MQTT 3.1.1; `null` when none arrived.
 */
export async function refusedConnack (node: StarlingNode, opts: IClientOptions): Promise<any> {
  const client = mqtt.connect(clientOptions(node, opts))
  opened.add(client)
  let connack: any = null
  client.on('packetreceive', (p: any) => { if (p.cmd === 'connack') connack = p })
  client.on('error', () => {})
  await new Promise<void>((resolve) => client.once('close', () => resolve()))
  return connack
}

/** Ends a client cleanly (DISCONNECT, so no will) and resolves once its socket is closed. */
export async function leave (client: MqttClient): Promise<void> {
  await client.endAsync()
  opened.delete(client)
}

/** Drops a client's socket without DISCONNECT (the broker sees a network failure). */
export function drop (client: MqttClient): void {
  ;(client as any).stream.destroy()
}

/**
 * Ends every client opened by {@link open} or {@link refusedConnack} (forcefully: no
 * DISCONNECT is awaited) and destroys every socket opened by {@link openRaw}.
 */
export async function closeOpened (): Promise<void> {
  await Promise.all([...opened].map(c => new Promise<void>(resolve => c.end(true, {}, () => resolve()))))
  opened.clear()
  for (const s of raws) s.destroy()
  raws.clear()
}

/**
 * Starts a node with `overrides` in `beforeAll` of the enclosing describe block and destroys
 * it in `afterAll`; call it in the block's body and the returned getter inside its tests.
 */
export function nodeWith (overrides: Record<string, string>): () => TestNode {
  let node: TestNode
  beforeAll(async () => { node = await startTestNode(overrides) })
  afterAll(async () => { await node.destroy() })
  return () => node
}

/** Resolves once wall time has passed `deadline` (for intervals the broker times itself). */
export async function until (deadline: number, what: string): Promise<void> {
  await waitFor(() => Date.now() >= deadline, what, deadline - Date.now() + 5000)
}

/**
 * Publishes 'marker' on `topic` through `via` and waits until `sub` has it: everything `via`
 * published before it, on topics `sub` is subscribed to, has been delivered (or never will be).
 * `sub` must already be subscribed to `topic`.
 */
export async function marker (sub: Opened, via: MqttClient, topic: string): Promise<void> {
  await via.publishAsync(topic, 'marker', { qos: 1 })
  await waitFor(() => sub.messages.some(m => m.topic === topic && m.payload.toString() === 'marker'), `marker on ${topic}`)
}

/**
 * SUBSCRIBEs to `subs` (with `opts`, QoS 1 by default; a map carries its own options) and
 * resolves with the SUBACK's reason codes, failures included (mqtt.js reports those as errors).
 */
export async function suback (
  client: MqttClient, subs: string | string[] | ISubscriptionMap, opts: IClientSubscribeOptions = { qos: 1 }
): Promise<number[]> {
  return await new Promise((resolve, reject) => {
    client.subscribe(subs, opts, (err: any, _granted: any, packet: any) => {
      if (packet?.granted !== undefined) resolve(packet.granted)
      else reject(err ?? new Error('no SUBACK'))
    })
  })
}

/** Publishes 'x' at QoS 1 and resolves with the PUBACK's reason code (0 for MQTT 3.1.1). */
export async function pubackCode (client: MqttClient, topic: string): Promise<number> {
  return await new Promise((resolve) => {
    const onPacket = (p: any): void => {
      if (p.cmd !== 'puback') return
      client.off('packetreceive', onPacket)
      resolve(p.reasonCode ?? 0)
    }
    client.on('packetreceive', onPacket)
    client.publish(topic, 'x', { qos: 1 }, () => undefined)
  })
}

/** A bare socket speaking MQTT, opened by {@link openRaw}: nothing is sent that a test did not write. */
export interface RawClient {
  /** Every packet received, in order. */
  packets: any[]
  /** Whether the socket has closed. */
  closed: () => boolean
  /** Encodes `packet` with mqtt-packet in the client's protocol version and writes it. */
  send: (packet: any) => void
  /** Writes `bytes` as they are: for packets mqtt-packet refuses to encode. */
  write: (bytes: Buffer) => void
  /** Ends the socket's sending side (a half-close: the client reads on). */
  end: () => void
  /** The n-th (1-based) packet of type `cmd` once it has arrived; `undefined` if the socket closes first. */
  next: (cmd: string, n?: number) => Promise<any>
}

/** A CONNECT packet for mqtt-packet: clean, no keep alive, an empty client id, then `fields`. */
export function connectPacket (protocolVersion: 4 | 5, fields: Record<string, any> = {}): any {
  return { cmd: 'connect', protocolId: 'MQTT', protocolVersion, clean: true, keepalive: 0, clientId: '', ...fields }
}

/** Opens a TCP socket to `node` that parses what comes back as `protocolVersion` packets; sends nothing. */
export async function openRaw (node: StarlingNode, protocolVersion: 4 | 5): Promise<RawClient> {
  return await openRawAt(node.port('mqtt:tcp'), protocolVersion)
}

/** {@link openRaw} to any MQTT server on 127.0.0.1:`port` (Mosquitto, to compare with it). */
export async function openRawAt (port: number, protocolVersion: 4 | 5): Promise<RawClient> {
  const socket = net.connect(port, '127.0.0.1')
  raws.add(socket)
  const packets: any[] = []
  let closed = false
  const parser = mqttPacket.parser({ protocolVersion })
  parser.on('packet', (p: any) => packets.push(p))
  parser.on('error', () => socket.destroy())
  socket.on('data', (d) => parser.parse(d))
  socket.on('close', () => { closed = true })
  socket.on('error', () => {})
  await new Promise<void>((resolve, reject) => { socket.once('connect', () => resolve()); socket.once('error', reject) })
  return {
    packets,
    closed: () => closed,
    send: (p) => socket.write(mqttPacket.generate(p, { protocolVersion })),
    write: (bytes) => socket.write(bytes),
    end: () => socket.end(),
    next: async (cmd, n = 1) => {
      const nth = (): any => packets.filter(p => p.cmd === cmd)[n - 1]
      await waitFor(() => nth() !== undefined || closed, `${cmd} #${n}`)
      return nth()
    }
  }
}

/**
 * Opens a raw socket (see {@link openRaw}) and sends a clean CONNECT as `clientId`; resolves
 * once the broker has accepted it and rejects with the CONNACK it got otherwise.
 */
export async function openRawSession (node: StarlingNode, protocolVersion: 4 | 5, clientId: string): Promise<RawClient> {
  const raw = await openRaw(node, protocolVersion)
  raw.send(connectPacket(protocolVersion, { clientId }))
  const connack = await raw.next('connack')
  const code = connack?.[protocolVersion === 5 ? 'reasonCode' : 'returnCode']
  if (code !== 0) throw new Error(`CONNECT of ${clientId} not accepted: ${JSON.stringify(connack ?? 'no CONNACK')}`)
  return raw
}
