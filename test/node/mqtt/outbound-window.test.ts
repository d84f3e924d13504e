import mqttPacket from 'mqtt-packet'
import { OutboundWindow } from '../../../node/mqtt/outbound-window.js'
import type { Wire } from '../../../node/mqtt/wire.js'

const V5 = { protocolVersion: 5 } as any

function publish (qos: 0 | 1 | 2, messageId: number, payload = 'x'): Buffer {
  return mqttPacket.generate({ cmd: 'publish', topic: 't/a', payload: Buffer.from(payload), qos, messageId: qos > 0 ? messageId : undefined } as any, V5)
}

/** The packets in `buf`, as [cmd, qos, messageId] triples. */
function decode (buf: Buffer): Array<[string, number, number | undefined]> {
  const out: Array<[string, number, number | undefined]> = []
  const parser = mqttPacket.parser(V5)
  parser.on('packet', (p: any) => out.push([p.cmd, p.qos ?? 0, p.messageId]))
  parser.parse(buf)
  return out
}

/** A window over a stand-in wire that records what the window releases. */
function windowOf (receiveMaximum: number): { window: OutboundWindow, released: Buffer[] } {
  const released: Buffer[] = []
  const wire = { sendFirst: (frames: Buffer[]) => released.push(...frames) } as unknown as Wire
  return { window: new OutboundWindow(wire, receiveMaximum), released }
}

describe('outbound window (client Receive Maximum) [MQTT-3.3.4-9]', () => {
  it('lets through at most Receive Maximum QoS 1/2 publishes, and QoS 0 and other packets always', () => {
    const { window } = windowOf(2)
    const ping = mqttPacket.generate({ cmd: 'pingresp' } as any, V5)
    const buf = Buffer.concat([publish(1, 1), publish(2, 2), publish(1, 3), publish(0, 0), ping, publish(1, 4)])
    expect(decode(window.filter(buf))).toEqual([['publish', 1, 1], ['publish', 2, 2], ['publish', 0, undefined], ['pingresp', 0, undefined]])
    expect(window.heldCount).toBe(2)
    expect(window.heldBytes).toBe(publish(1, 3).length + publish(1, 4).length)
  })

  it('returns the same buffer when nothing is held', () => {
    const { window } = windowOf(5)
    const buf = Buffer.concat([publish(1, 1), publish(0, 0)])
    expect(window.filter(buf)).toBe(buf)
  })

  it('releases held publishes in order as acknowledgements free places, and lets them through then', () => {
    const { window, released } = windowOf(1)
    window.filter(Buffer.concat([publish(1, 1), publish(1, 2), publish(1, 3)]))
    window.acked(99) // not in flight: nothing happens
    expect(released).toHaveLength(0)
    window.acked(1)
    expect(released.map(f => decode(f)[0][2])).toEqual([2])
    // the released frame is in flight: the wire's next flush passes it
    expect(decode(window.filter(released[0]))).toEqual([['publish', 1, 2]])
    // a new publish still waits behind the held one
    expect(decode(window.filter(publish(1, 4)))).toEqual([])
    window.acked(2)
    expect(released.map(f => decode(f)[0][2])).toEqual([2, 3])
    expect(window.heldCount).toBe(1)
    expect(window.inflightOut).toBe(1)
  })

  it('lets a resent publish already in flight through', () => {
    const { window } = windowOf(1)
    window.filter(publish(1, 7))
    expect(decode(window.filter(publish(1, 7)))).toEqual([['publish', 1, 7]])
  })
})
