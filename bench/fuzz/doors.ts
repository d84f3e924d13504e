/**
 * The MQTT doors of the fuzzer: each is a transport (how to reach a listener) and a packet
 * source (what to send), plus the transport's own garbage. `bench/fuzz.ts` runs them by
 * name (`--door`), the e2e suites run a seeded slice of each.
 */
import type { MqttDoor } from './driver.js'
import { packetScript } from './packet-source.js'
import { connectScript } from './connect-cases.js'
import { sessionScript } from './sessions.js'
import { tcpTransport, tlsTransport, wsTransport, wssTransport, tlsGarbage, wsGarbage, wssGarbage, prefacedTcpTransport } from './transports.js'
import { proxyGarbage, randomProxyHeader } from './proxy-headers.js'

/** Plain TCP: a CONNECT, packets, then a protocol error or a blind mutation. */
export const tcpDoor: MqttDoor = { name: 'tcp', listener: 'mqtt:tcp', transport: tcpTransport, source: packetScript }

/** Plain TCP: one CONNECT per connection with one field or property changed (3.1, 3.1.1, 5.0). */
export const connectDoor: MqttDoor = { name: 'connect', listener: 'mqtt:tcp', transport: tcpTransport, source: connectScript }

/** Plain TCP: persistent sessions that resume, take over and leave messages in flight, with errors interleaved; the witness subscriber leaves and comes back. */
export const sessionsDoor: MqttDoor = { name: 'sessions', listener: 'mqtt:tcp', transport: tcpTransport, source: sessionScript, persistentWitness: true }

/** TLS: the tcp door's packets, and on 15% of the connections bytes that are not TLS or a broken handshake. */
export const tlsDoor: MqttDoor = { name: 'tls', listener: 'mqtt:ssl', transport: tlsTransport, source: packetScript, garbage: tlsGarbage, garbageShare: 0.15 }

/** WebSocket: the tcp door's packets in binary messages (split, fragmented, several per frame), and bad frames and handshakes on 15%. */
export const wsDoor: MqttDoor = { name: 'ws', listener: 'mqtt:ws', transport: wsTransport, source: packetScript, garbage: wsGarbage, garbageShare: 0.15 }

/** WebSocket over TLS: as ws, the garbage half WebSocket, half TLS. */
export const wssDoor: MqttDoor = { name: 'wss', listener: 'mqtt:wss', transport: wssTransport, source: packetScript, garbage: wssGarbage, garbageShare: 0.15 }

/**
 * PROXY protocol on plain TCP (`listener.tcp.external.proxy_protocol = on`): a random valid
 * v1 or v2 header, then the tcp door's packets; on 20% of the connections no header, a broken
 * or a cut one.
 */
export const proxyDoor: MqttDoor = {
  name: 'proxy',
  listener: 'mqtt:tcp',
  transport: prefacedTcpTransport(randomProxyHeader),
  source: packetScript,
  garbage: proxyGarbage,
  garbageShare: 0.2,
  preface: randomProxyHeader,
  nodeEnv: { STARLING_LISTENER__TCP__EXTERNAL__PROXY_PROTOCOL: 'on' }
}

/** Every MQTT door, by name. */
export const MQTT_DOORS: Readonly<Record<string, MqttDoor>> = {
  tcp: tcpDoor, connect: connectDoor, sessions: sessionsDoor, tls: tlsDoor, ws: wsDoor, wss: wssDoor, proxy: proxyDoor
}
