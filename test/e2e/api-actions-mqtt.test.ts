/**
 * `/api/v3/mqtt/*` over real HTTP with real mqtt.js clients: publish at each QoS, retained,
 * base64, as a client id; subscribe and unsubscribe acting on a connected client's session;
 * the batch forms' per-item codes; and the bad inputs, each changing nothing.
 */
import { startTestNode, closeClients, connect, collect, nextMessage, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, open } from '../helpers/mqtt.js'
import { apiOf, expectError, settle } from './api-actions-client.js'
import type { MessageEvent } from '../../node/hooks.js'

let node: TestNode
const api = apiOf(() => node)

beforeAll(async () => { node = await startTestNode() })
afterEach(async () => { await closeClients(); await closeOpened() })
afterAll(async () => { await node.destroy() })

/** The subscriptions of a connected client, as aedes holds them. */
const subsOf = (clientId: string): string[] => Object.keys(node.broker.core.client(clientId)?.subscriptions ?? {}).sort()

describe('POST /api/v3/mqtt/publish', () => {
  it('delivers to an MQTT subscriber at QoS 0, 1 and 2', async () => {
    const sub = await connect(node, { clientId: 'pub-sub' })
    await sub.subscribeAsync('http/qos', { qos: 2 })
    for (const qos of [0, 1, 2]) {
      const next = nextMessage(sub)
      const res = await api('POST', '/mqtt/publish', { topic: 'http/qos', payload: `at ${qos}`, qos, retain: false, client_id: 'api' })
      expect(res).toEqual({ status: 200, body: { code: 0 } })
      const msg = await next
      expect(msg.payload.toString()).toBe(`at ${qos}`)
      expect(msg.packet.qos).toBe(qos)
    }
  })

  it('keeps a retained message for a later subscriber', async () => {
    expect((await api('POST', '/mqtt/publish', { topic: 'http/retained', payload: 'kept', qos: 1, retain: true })).body).toEqual({ code: 0 })
    const late = await connect(node, { clientId: 'late' })
    const next = nextMessage(late)
    await late.subscribeAsync('http/retained', { qos: 1 })
    const msg = await next
    expect(msg.payload.toString()).toBe('kept')
    expect(msg.packet.retain).toBe(true)
    await api('POST', '/mqtt/publish', { topic: 'http/retained', payload: '', retain: true }) // clears it
  })

  it('decodes a base64 payload, and sends an empty payload when none is given', async () => {
    const sub = await connect(node, { clientId: 'b64-sub' })
    await sub.subscribeAsync('http/b64', { qos: 1 })
    const got = collect(sub)
    const bytes = Buffer.from([0, 1, 2, 254, 255])
    expect((await api('POST', '/mqtt/publish', { topic: 'http/b64', payload: bytes.toString('base64'), encoding: 'base64', qos: 1 })).body.code).toBe(0)
    expect((await api('POST', '/mqtt/publish', { topic: 'http/b64', qos: 1 })).body.code).toBe(0)
    await waitFor(() => got.length === 2, 'two messages')
    expect(got[0].payload).toEqual(bytes)
    expect(got[1].payload.length).toBe(0)
  })

  it('publishes to each topic of a comma-separated topics list', async () => {
    const sub = await connect(node, { clientId: 'topics-sub' })
    await sub.subscribeAsync('http/list/#', { qos: 1 })
    const got = collect(sub)
    expect((await api('POST', '/mqtt/publish', { topics: 'http/list/a,http/list/b', payload: 'x', qos: 1 })).body.code).toBe(0)
    await waitFor(() => got.length === 2, 'both topics')
    expect(got.map(m => m.topic).sort()).toEqual(['http/list/a', 'http/list/b'])
  })

  it('publishes as client_id: the message.publish event names it, and No Local skips that client', async () => {
    const events: MessageEvent[] = []
    const off = node.hooks.on('message.publish', (e) => { if (e.topic === 'http/as') events.push(e) })
    const self = await open(node, { clientId: 'publisher-self', protocolVersion: 5 })
    await self.client.subscribeAsync('http/as', { qos: 1, nl: true })
    const other = await connect(node, { clientId: 'publisher-other', protocolVersion: 5 })
    await other.subscribeAsync('http/as', { qos: 1 })
    const next = nextMessage(other)
    expect((await api('POST', '/mqtt/publish', { topic: 'http/as', payload: 'mine', qos: 1, client_id: 'publisher-self' })).body.code).toBe(0)
    await next
    await settle()
    off()
    expect(events.map(e => e.client_id)).toEqual(['publisher-self'])
    expect(self.messages).toEqual([])
  })

  it('refuses bad input with its code and publishes nothing', async () => {
    const sub = await connect(node, { clientId: 'bad-pub-sub' })
    await sub.subscribeAsync('#', { qos: 1 })
    const got = collect(sub)
    const cases: Array<[unknown, number, boolean?]> = [
      ['{"topic": "t", ', 109, true],
      [{ payload: 'no topic' }, 107],
      [{ topic: 5, payload: 'x' }, 108],
      [{ topic: 't', payload: 5 }, 108],
      [{ topic: 't', qos: '1' }, 108],
      [{ topic: 't', retain: 'yes' }, 108],
      [{ topic: 't', client_id: 7 }, 108],
      [{ topic: 't', payload: '%%%', encoding: 'base64' }, 108],
      [{ topic: 't', encoding: 'hex' }, 108],
      [{ topic: 'a/+/b', payload: 'x' }, 115],
      [{ topic: 'a/#', payload: 'x' }, 115],
      [{ topic: '', payload: 'x' }, 115],
      [{ topic: 'a\u0000b', payload: 'x' }, 115],
      [{ topic: '$SYS/brokers/fake', payload: 'x' }, 115],
      [{ topics: 'ok/1,bad/#', payload: 'x' }, 115],
      [{ topic: 't', qos: 3 }, 116],
      [{ topic: 't', qos: -1 }, 116]
    ]
    for (const [body, code, raw] of cases) expectError(await api('POST', '/mqtt/publish', body, { raw }), code)
    expect((await api('POST', '/mqtt/publish', { topic: 'bad-pub/sentinel', payload: 'end', qos: 1 })).body.code).toBe(0)
    await waitFor(() => got.some(m => m.topic === 'bad-pub/sentinel'), 'the sentinel')
    expect(got.map(m => m.topic)).toEqual(['bad-pub/sentinel'])
  })
})

describe('POST /api/v3/mqtt/subscribe and /mqtt/unsubscribe', () => {
  it('subscribes a connected client, which then receives messages on the topic', async () => {
    const target = await connect(node, { clientId: 'target-1' })
    const pub = await connect(node, { clientId: 'target-pub' })
    expect((await api('POST', '/mqtt/subscribe', { topic: 'sub/+/x', qos: 1, client_id: 'target-1' })).body).toEqual({ code: 0 })
    expect(node.broker.core.client('target-1')!.subscriptions['sub/+/x'].qos).toBe(1)
    const next = nextMessage(target)
    await pub.publishAsync('sub/a/x', 'hello', { qos: 1 })
    const msg = await next
    expect(msg.topic).toBe('sub/a/x')
    expect(msg.packet.qos).toBe(1)
  })

  it('unsubscribes a connected client, which then stops receiving', async () => {
    const target = await connect(node, { clientId: 'target-2' })
    await target.subscribeAsync(['unsub/t', 'unsub/sentinel'], { qos: 1 })
    const got = collect(target)
    const pub = await connect(node, { clientId: 'target-2-pub' })
    expect((await api('POST', '/mqtt/unsubscribe', { topic: 'unsub/t', client_id: 'target-2' })).body).toEqual({ code: 0 })
    expect(subsOf('target-2')).toEqual(['unsub/sentinel'])
    await pub.publishAsync('unsub/t', 'gone', { qos: 1 })
    await pub.publishAsync('unsub/sentinel', 'end', { qos: 1 })
    await waitFor(() => got.length > 0, 'the sentinel')
    expect(got.map(m => m.topic)).toEqual(['unsub/sentinel'])
  })

  it('changes a persistent session: the subscribe and the unsubscribe outlive a reconnect', async () => {
    const opts = { clientId: 'persistent-1', clean: false, protocolVersion: 4 as const }
    let client = await connect(node, opts)
    expect((await api('POST', '/mqtt/subscribe', { topic: 'persist/t', qos: 1, client_id: 'persistent-1' })).body.code).toBe(0)
    await client.endAsync()
    await waitFor(() => node.broker.core.client('persistent-1') === undefined, 'the disconnect')
    client = await connect(node, opts)
    expect(subsOf('persistent-1')).toEqual(['persist/t'])
    expect((await api('POST', '/mqtt/unsubscribe', { topic: 'persist/t', client_id: 'persistent-1' })).body.code).toBe(0)
    await client.endAsync()
    await waitFor(() => node.broker.core.client('persistent-1') === undefined, 'the disconnect')
    await connect(node, opts)
    expect(subsOf('persistent-1')).toEqual([])
  })

  it('subscribes to a shared subscription: each message goes to one member', async () => {
    const a = await connect(node, { clientId: 'share-a' })
    const b = await connect(node, { clientId: 'share-b' })
    const gotA = collect(a)
    const gotB = collect(b)
    for (const id of ['share-a', 'share-b']) {
      expect((await api('POST', '/mqtt/subscribe', { topic: '$share/g/shared/t', qos: 1, client_id: id })).body.code).toBe(0)
    }
    for (let i = 0; i < 4; i++) await api('POST', '/mqtt/publish', { topic: 'shared/t', payload: String(i), qos: 1 })
    await waitFor(() => gotA.length + gotB.length === 4, 'four deliveries')
    await settle()
    expect(gotA.length + gotB.length).toBe(4)
  })

  it('answers 112 when the client is not connected, for subscribe and unsubscribe', async () => {
    expectError(await api('POST', '/mqtt/subscribe', { topic: 't', qos: 0, client_id: 'nobody-here' }), 112, 404)
    expectError(await api('POST', '/mqtt/unsubscribe', { topic: 't', client_id: 'nobody-here' }), 112, 404)
  })

  it('refuses bad input with its code and leaves the session unchanged', async () => {
    const target = await connect(node, { clientId: 'target-bad' })
    await target.subscribeAsync('keep/me', { qos: 0 })
    const subCases: Array<[unknown, number, boolean?]> = [
      ['not json', 109, true],
      [{ topic: 't', qos: 0 }, 107],
      [{ qos: 0, client_id: 'target-bad' }, 107],
      [{ topic: 't', qos: 0, client_id: 5 }, 108],
      [{ topic: ['t'], client_id: 'target-bad' }, 108],
      [{ topic: 't', qos: '0', client_id: 'target-bad' }, 108],
      [{ topic: 'a/#/b', qos: 0, client_id: 'target-bad' }, 115],
      [{ topic: 'a+', qos: 0, client_id: 'target-bad' }, 115],
      [{ topic: '$share/g', qos: 0, client_id: 'target-bad' }, 115],
      [{ topic: '', qos: 0, client_id: 'target-bad' }, 115],
      [{ topic: 't', qos: 3, client_id: 'target-bad' }, 116]
    ]
    for (const [body, code, raw] of subCases) expectError(await api('POST', '/mqtt/subscribe', body, { raw }), code)
    const unsubCases: Array<[unknown, number, boolean?]> = [
      ['{', 109, true],
      [{ topic: 'keep/me' }, 107],
      [{ client_id: 'target-bad' }, 107],
      [{ topic: 'keep/me', client_id: false }, 108],
      [{ topic: 'keep/#/me', client_id: 'target-bad' }, 115]
    ]
    for (const [body, code, raw] of unsubCases) expectError(await api('POST', '/mqtt/unsubscribe', body, { raw }), code)
    expect(subsOf('target-bad')).toEqual(['keep/me'])
  })
})

describe('batch forms', () => {
  it('publish_batch answers a code per message and publishes the good ones', async () => {
    const sub = await connect(node, { clientId: 'batch-sub' })
    await sub.subscribeAsync('batch/#', { qos: 1 })
    const got = collect(sub)
    const res = await api('POST', '/mqtt/publish_batch', [
      { topic: 'batch/1', payload: 'one', qos: 1 },
      { topic: 'batch/+', payload: 'bad topic' },
      { topic: 'batch/2', payload: 'bad qos', qos: 5 },
      { payload: 'no topic' },
      'not an object',
      { topic: 'batch/3', payload: 'three', qos: 2, client_id: 'batcher' }
    ])
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      code: 0,
      data: [
        { topic: 'batch/1', code: 0 },
        { topic: 'batch/+', code: 115 },
        { topic: 'batch/2', code: 116 },
        { topic: null, code: 107 },
        { topic: null, code: 108 },
        { topic: 'batch/3', code: 0 }
      ]
    })
    await waitFor(() => got.length === 2, 'the two good messages')
    await settle()
    expect(got.map(m => m.payload.toString()).sort()).toEqual(['one', 'three'])
  })

  it('subscribe_batch and unsubscribe_batch answer a code per item', async () => {
    await connect(node, { clientId: 'batch-target' })
    const sub = await api('POST', '/mqtt/subscribe_batch', [
      { topic: 'bs/1', qos: 1, client_id: 'batch-target' },
      { topic: 'bs/2', qos: 1, client_id: 'batch-nobody' },
      { topic: 'bs/#/x', qos: 1, client_id: 'batch-target' },
      { topic: 'bs/3', qos: 7, client_id: 'batch-target' },
      { topic: 'bs/4', client_id: 'batch-target' }
    ])
    expect(sub.body).toEqual({
      code: 0,
      data: [
        { client_id: 'batch-target', topic: 'bs/1', code: 0 },
        { client_id: 'batch-nobody', topic: 'bs/2', code: 112 },
        { client_id: 'batch-target', topic: 'bs/#/x', code: 115 },
        { client_id: 'batch-target', topic: 'bs/3', code: 116 },
        { client_id: 'batch-target', topic: 'bs/4', code: 0 }
      ]
    })
    expect(subsOf('batch-target')).toEqual(['bs/1', 'bs/4'])
    const unsub = await api('POST', '/mqtt/unsubscribe_batch', [
      { topic: 'bs/1', client_id: 'batch-target' },
      { topic: 'bs/1', client_id: 'batch-nobody' },
      { client_id: 'batch-target' }
    ])
    expect(unsub.body.data).toEqual([
      { client_id: 'batch-target', topic: 'bs/1', code: 0 },
      { client_id: 'batch-nobody', topic: 'bs/1', code: 112 },
      { client_id: 'batch-target', topic: null, code: 107 }
    ])
    expect(subsOf('batch-target')).toEqual(['bs/4'])
  })

  it('refuses a batch body that is not an array (108) or not JSON (109)', async () => {
    for (const path of ['/mqtt/publish_batch', '/mqtt/subscribe_batch', '/mqtt/unsubscribe_batch']) {
      expectError(await api('POST', path, { topic: 't' }), 108, 400)
      expectError(await api('POST', path, '[{', { raw: true }), 109, 400)
    }
  })
})
