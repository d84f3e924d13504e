import { createMetrics } from '../../../node/metrics.js'
import { createMissedAcksTap } from '../../../node/sys/missed-acks.js'
import { frame, fakeWire, type Frame } from './frames.js'

const tap = (m = createMetrics()) => ({ m, t: createMissedAcksTap(m) })
const fin = (t: ReturnType<typeof createMissedAcksTap>, w: object, f: Frame): void => t.inbound(w as any, f.buf, f.start, f.body, f.end)
const fout = (t: ReturnType<typeof createMissedAcksTap>, w: object, f: Frame): void => t.outbound(w as any, f.buf, f.start, f.body, f.end)
const missed = (m: ReturnType<typeof createMetrics>): number[] =>
  [m['packets/puback/missed'], m['packets/pubrec/missed'], m['packets/pubrel/missed'], m['packets/pubcomp/missed']]

describe('missed acknowledgements', () => {
  it('counts nothing for complete QoS 1 and QoS 2 exchanges in both directions', () => {
    const { m, t } = tap()
    const w = fakeWire('c')
    fout(t, w, frame({ cmd: 'publish', topic: 'a/b', payload: 'x', qos: 1, messageId: 7 }))
    fin(t, w, frame({ cmd: 'puback', messageId: 7 }))
    fout(t, w, frame({ cmd: 'publish', topic: 'a/b', payload: 'x', qos: 2, messageId: 8 }))
    fin(t, w, frame({ cmd: 'pubrec', messageId: 8 }))
    fout(t, w, frame({ cmd: 'pubrel', messageId: 8 }))
    fin(t, w, frame({ cmd: 'pubcomp', messageId: 8 }))
    // the client publishes QoS 2: PUBREC out, PUBREL in
    fout(t, w, frame({ cmd: 'pubrec', messageId: 3 }))
    fin(t, w, frame({ cmd: 'pubrel', messageId: 3 }))
    expect(missed(m)).toEqual([0, 0, 0, 0])
  })

  it('counts each acknowledgement of an unknown packet id once, per type', () => {
    const { m, t } = tap()
    const w = fakeWire('c')
    for (const cmd of ['puback', 'pubrec', 'pubrel', 'pubcomp']) fin(t, w, frame({ cmd, messageId: 99 }))
    expect(missed(m)).toEqual([1, 1, 1, 1])
  })

  it('counts a second PUBACK for the same id as missed, and one for a QoS 2 id', () => {
    const { m, t } = tap()
    const w = fakeWire('c')
    fout(t, w, frame({ cmd: 'publish', topic: 't', payload: 'x', qos: 1, messageId: 1 }))
    fout(t, w, frame({ cmd: 'publish', topic: 't', payload: 'x', qos: 2, messageId: 2 }))
    fin(t, w, frame({ cmd: 'puback', messageId: 1 }))
    fin(t, w, frame({ cmd: 'puback', messageId: 1 }))
    fin(t, w, frame({ cmd: 'puback', messageId: 2 }))
    expect(m['packets/puback/missed']).toBe(2)
  })

  it('keeps what each connection waits for apart', () => {
    const { m, t } = tap()
    fout(t, fakeWire('a'), frame({ cmd: 'publish', topic: 't', payload: 'x', qos: 1, messageId: 5 }))
    fin(t, fakeWire('b'), frame({ cmd: 'puback', messageId: 5 }))
    expect(m['packets/puback/missed']).toBe(1)
  })

  it('expects no PUBREL after a v5 PUBREC with an error reason code', () => {
    const { m, t } = tap()
    const w = fakeWire('c', 5)
    fout(t, w, frame({ cmd: 'pubrec', messageId: 4, reasonCode: 0x87 }, 5))
    fin(t, w, frame({ cmd: 'pubrel', messageId: 4 }, 5))
    expect(m['packets/pubrel/missed']).toBe(1)
  })
})
