import { encodeBatch, decodeBatch, type ForwardedMessage } from '../../cluster/pub-batch.js'

const messages: ForwardedMessage[] = [
  { topic: 't/1', payload: Buffer.from('hello'), qos: 0, retain: false, brokerCounter: 1 },
  { topic: 'ünïcode/☃', payload: Buffer.alloc(0), qos: 2, retain: true, brokerCounter: 2 ** 40, clientId: 'c-ü' },
  {
    topic: 's/x',
    payload: Buffer.from([0, 255, 1]),
    qos: 1,
    retain: false,
    brokerCounter: 3,
    properties: { userProperties: { k: ['a', 'b'] }, correlationData: Buffer.from('c'), messageExpiryInterval: 60 },
    groups: ['$share/g/s/#']
  }
]

function decodeAll (body: Buffer): Array<[string, ForwardedMessage]> {
  const out: Array<[string, ForwardedMessage]> = []
  decodeBatch(body, (id, m) => out.push([id, m]))
  return out
}

test('a batch decodes to the messages it was made of, with one broker id', () => {
  const decoded = decodeAll(encodeBatch('n1@127.0.0.1', messages))
  expect(decoded.map(([id]) => id)).toEqual(['n1@127.0.0.1', 'n1@127.0.0.1', 'n1@127.0.0.1'])
  expect(decoded.map(([, m]) => m)).toEqual(messages)
})

test('payloads are copies, not views of the frame', () => {
  const body = encodeBatch('n', [messages[0]])
  const [[, m]] = decodeAll(body)
  body.fill(0)
  expect(m.payload.toString()).toBe('hello')
})

test('a truncated batch is refused with an error naming where', () => {
  const body = encodeBatch('n', messages)
  for (const cut of [1, 7, 20, body.length - 1]) {
    expect(() => decodeAll(body.subarray(0, cut))).toThrow(/truncated at byte/)
  }
})

test('a batch whose properties are not a map, or whose groups are not strings, is refused', () => {
  // found by the cluster door of the fuzzer (bench/fuzz/cluster-door.ts): a bridged message
  // with null properties was published, then forwarded to a member, and the node died
  for (const properties of [null, [1], 'x', 7]) {
    const body = encodeBatch('n', [{ ...messages[0], properties: properties as any }])
    expect(() => decodeAll(body)).toThrow(/properties of message 1 are not a map/)
  }
  for (const groups of [null, 'g', [1]]) {
    const body = encodeBatch('n', [messages[0], { ...messages[0], groups: groups as any }])
    expect(() => decodeAll(body)).toThrow(/groups of message 2 are not a list of strings/)
  }
})
