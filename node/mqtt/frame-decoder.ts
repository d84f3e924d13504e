/**
 * Decoding single MQTT frames into mqtt-packet's packet objects, for readers outside the
 * MQTT core that show packets (client traces). node/mqtt/ is the only folder that imports
 * mqtt-packet; this is its decoding door for everything else.
 */
import mqttPacket from 'mqtt-packet'

/** A decoded packet, as mqtt-packet names its fields (`cmd`, `messageId`, `properties` ...). */
export type DecodedPacket = Record<string, any> & { cmd: string }

/**
 * Makes a decoder of whole frames: returns the packet of `frame` (one complete frame, e.g.
 * as a packet tap sees it) read with protocol level `version` (0: before CONNECT, read as
 * 3.1.1), or null when it does not decode (cut or malformed). One parser per protocol level
 * is kept and reused; a parser that failed is dropped and made again on the next frame.
 */
export function createFrameDecoder (): (frame: Buffer, version: number) => DecodedPacket | null {
  const parsers = new Map<number, { parser: any, out: DecodedPacket[] }>()
  return (frame, version) => {
    let entry = parsers.get(version)
    if (entry === undefined) {
      const out: DecodedPacket[] = []
      const parser = mqttPacket.parser({ protocolVersion: version === 0 ? 4 : version } as any)
      parser.on('packet', (p: any) => out.push(p))
      parser.on('error', () => parsers.delete(version))
      parsers.set(version, entry = { parser, out })
    }
    entry.out.length = 0
    entry.parser.parse(frame)
    return entry.out.length === 1 ? entry.out[0] : null
  }
}
