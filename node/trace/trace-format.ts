/**
 * The lines a trace writes, EMQ X style:
 *
 * `2026-11-22T10:00:00.123Z [debug] client1@127.0.0.1:5555 RECV PUBLISH(Q1, R0, D0, Topic=t/1, PacketId=2, Payload=hello)`
 *
 * Packet lines (`RECV` / `SEND` and the packet as EMQ X prints it) come from the frames of
 * the connection; event lines (`CONNECTED(...)`, `PUBLISH(...)`, `DELIVER(...)` ...) from the
 * hooks bus. Passwords are never written; payloads longer than {@link MAX_TRACED_PAYLOAD}
 * bytes are cut, and payloads that are not UTF-8 text are written in hex.
 */
import { isUtf8 } from 'node:buffer'
import type { LogLevel } from '../logger.js'
import type { ConnectedEvent, DisconnectedEvent, MessageEvent, DeliverEvent, DroppedEvent, SubscribeEvent } from '../hooks.js'

/** Most payload bytes written per line. */
export const MAX_TRACED_PAYLOAD = 1024

/** One line: ISO timestamp, level, `clientid@peername` (just the client id without a peer), text. */
export function traceLine (level: LogLevel, clientId: string, peername: string, text: string, at: Date = new Date()): string {
  const who = peername === '' ? (clientId === '' ? 'undefined' : clientId) : `${clientId === '' ? 'undefined' : clientId}@${peername}`
  return `${at.toISOString()} [${level}] ${who} ${text}\n`
}

/** A payload as a trace shows it: the text when it is printable UTF-8, else `0x<hex>`. */
export function formatPayload (payload: Buffer | string | null | undefined): string {
  if (payload === null || payload === undefined) return ''
  const buf = typeof payload === 'string' ? Buffer.from(payload) : payload
  const cut = buf.length > MAX_TRACED_PAYLOAD ? buf.subarray(0, MAX_TRACED_PAYLOAD) : buf
  // eslint-disable-next-line no-control-regex
  const text = isUtf8(cut) && !/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/.test(cut.toString()) ? cut.toString() : '0x' + cut.toString('hex')
  return cut === buf ? text : `${text}...(${buf.length} bytes)`
}

function flags (qos: number, retain: boolean, dup: boolean): string {
  return `Q${qos}, R${retain ? 1 : 0}, D${dup ? 1 : 0}`
}

/** An MQTT packet (as mqtt-packet decodes it) in EMQ X's trace notation. */
export function formatPacket (p: any): string {
  const rc = (p.reasonCode ?? p.returnCode ?? 0) as number
  switch (p.cmd) {
    case 'connect':
      return `CONNECT(${flags(0, false, false)}, ClientId=${p.clientId}, ProtoName=${p.protocolId}, ProtoVer=${p.protocolVersion}, ` +
        `CleanStart=${p.clean !== false}, KeepAlive=${p.keepalive}, Username=${p.username ?? 'undefined'}, ` +
        `Password=${p.password === undefined ? 'undefined' : '******'}${p.will ? `, Will(Q${p.will.qos}, R${p.will.retain ? 1 : 0}, Topic=${p.will.topic})` : ''})`
    case 'connack':
      return `CONNACK(AckFlags=${p.sessionPresent === true ? 1 : 0}, ReasonCode=${rc})`
    case 'publish':
      return `PUBLISH(${flags(p.qos, p.retain, p.dup)}, Topic=${p.topic}${p.qos > 0 ? `, PacketId=${p.messageId}` : ''}, Payload=${formatPayload(p.payload)})`
    case 'puback':
    case 'pubrec':
    case 'pubrel':
    case 'pubcomp':
      return `${p.cmd.toUpperCase()}(PacketId=${p.messageId}, ReasonCode=${rc})`
    case 'subscribe':
      return `SUBSCRIBE(PacketId=${p.messageId}, TopicFilters=[${(p.subscriptions ?? []).map((s: any) => `${s.topic}(Q${s.qos})`).join(', ')}])`
    case 'suback':
      return `SUBACK(PacketId=${p.messageId}, ReasonCodes=[${(p.granted ?? p.reasonCodes ?? []).join(', ')}])`
    case 'unsubscribe':
      return `UNSUBSCRIBE(PacketId=${p.messageId}, TopicFilters=[${(p.unsubscriptions ?? []).join(', ')}])`
    case 'unsuback':
      return `UNSUBACK(PacketId=${p.messageId})`
    case 'pingreq':
      return 'PINGREQ'
    case 'pingresp':
      return 'PINGRESP'
    case 'disconnect':
      return `DISCONNECT(ReasonCode=${rc})`
    case 'auth':
      return `AUTH(ReasonCode=${rc})`
    default:
      return String(p.cmd).toUpperCase()
  }
}

/** `client.connected` as a line's text. */
export function connectedText (e: ConnectedEvent): string {
  return `CONNECTED(ClientId=${e.client_id}, Username=${e.username ?? 'undefined'}, ProtoName=${e.proto_name}, ProtoVer=${e.proto_ver}, ` +
    `CleanStart=${e.clean_start}, KeepAlive=${e.keepalive}, ConnAck=${e.connack})`
}

/** `client.disconnected` as a line's text. */
export function disconnectedText (e: DisconnectedEvent): string {
  return `DISCONNECTED(Reason=${e.reason})`
}

/** `client.subscribe` / `client.unsubscribe` as a line's text. */
export function subscriptionText (e: SubscribeEvent, unsubscribe: boolean): string {
  const filters = e.topic_filters.map((f) => unsubscribe ? f.topic : `${f.topic}(Q${f.qos})`).join(', ')
  return `${unsubscribe ? 'UNSUBSCRIBE' : 'SUBSCRIBE'}(TopicFilters=[${filters}])`
}

/** `message.publish`: a message the client (or the broker for it) published. */
export function publishText (e: MessageEvent): string {
  return `PUBLISH(${flags(e.qos, e.flags.retain, e.flags.dup)}, Topic=${e.topic}, Payload=${formatPayload(e.payload)})`
}

/** `message.deliver`: a message on its way to the client. */
export function deliverText (e: DeliverEvent): string {
  return `DELIVER(${flags(e.qos, e.flags.retain, e.flags.dup)}, Topic=${e.topic}, From=${e.from_client_id ?? 'undefined'}, Payload=${formatPayload(e.payload)})`
}

/** `message.acked`: the client acknowledged a QoS 1/2 delivery. */
export function ackedText (e: DeliverEvent): string {
  return `ACKED(Q${e.qos}, Topic=${e.topic}, Payload=${formatPayload(e.payload)})`
}

/** `message.dropped`: a message of the client's that no one received. */
export function droppedText (e: DroppedEvent): string {
  return `DROPPED(Q${e.qos}, Topic=${e.topic}, Reason=${e.reason}, Payload=${formatPayload(e.payload)})`
}
