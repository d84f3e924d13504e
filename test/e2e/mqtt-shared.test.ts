/**
 * Shared subscriptions (`$share/<group>/<filter>`, `$queue/<filter>`) with real MQTT 5 and
 * 3.1.1 clients: one member per group gets each message, the dispatch strategies of
 * `broker.shared_subscription_strategy`, `mqtt.shared_subscription`, retained messages and
 * persistent sessions (MQTT 5.0 §4.8.2).
 */
import type { IClientOptions, MqttClient } from 'mqtt'
import { connect, closeClients, nextMessage, waitFor, type TestNode } from '../helpers/node.js'
import { open, leave, suback, nodeWith, closeOpened, type Opened } from '../helpers/mqtt.js'

afterEach(async () => {
  await closeOpened()
  await closeClients()
})

/** Connects one member per protocol version in `versions`, each subscribed to `filter`. */
async function members (node: TestNode, filter: string, versions: Array<4 | 5>): Promise<Opened[]> {
  const out: Opened[] = []
  for (const protocolVersion of versions) {
    const m = await open(node, { protocolVersion })
    await m.client.subscribeAsync(filter, { qos: 1 })
    out.push(m)
  }
  return out
}

/** Publishes `count` QoS 1 messages `${prefix}-<i>` on `topic`, in order. */
async function publishMany (pub: MqttClient, topic: string, prefix: string, count: number): Promise<string[]> {
  const sent: string[] = []
  for (let i = 0; i < count; i++) {
    sent.push(`${prefix}-${i}`)
    await pub.publishAsync(topic, `${prefix}-${i}`, { qos: 1 })
  }
  return sent
}

function received (group: Opened[], prefix = ''): string[] {
  return group.flatMap(m => m.messages.map(x => x.payload.toString()).filter(p => p.startsWith(prefix)))
}

/** Each member's share of the messages whose payload starts with `prefix`. */
function counts (group: Opened[], prefix: string): number[] {
  return group.map(m => m.messages.filter(x => x.payload.toString().startsWith(prefix)).length)
}

describe('random strategy (the default)', () => {
  const node = nodeWith({})

  it('gives each message to exactly one member of each group, and every message to plain subscribers', async () => {
    const g = await members(node(), '$share/g/t/#', [5, 4, 5])
    const h = await members(node(), '$share/h/t/#', [4, 5])
    const [plain] = await members(node(), 't/#', [5])
    const pub = await connect(node(), { protocolVersion: 5 })
    const sent = await publishMany(pub, 't/one', 'msg', 12)

    await waitFor(() => plain.messages.length >= 12 && received(g).length >= 12 && received(h).length >= 12, 'all deliveries')
    expect(plain.messages.map(m => m.payload.toString())).toEqual(sent)
    expect(received(g).sort()).toEqual([...sent].sort())
    expect(received(h).sort()).toEqual([...sent].sort())
    // members see the real topic, not the shared filter
    expect(new Set([...g, ...h].flatMap(m => m.messages.map(x => x.topic)))).toEqual(new Set(['t/one']))
    // random: with 12 messages and 3 members, more than one member is used
    expect(counts(g, 'msg').filter(n => n > 0).length).toBeGreaterThan(1)
  })

  it('treats $queue/<filter> as one group', async () => {
    const q = await members(node(), '$queue/q/t', [5, 4, 5])
    const pub = await connect(node(), { protocolVersion: 4 })
    const sent = await publishMany(pub, 'q/t', 'queued', 9)
    await waitFor(() => received(q).length >= 9, 'all deliveries')
    expect(received(q).sort()).toEqual([...sent].sort())
    expect(new Set(q.flatMap(m => m.messages.map(x => x.topic)))).toEqual(new Set(['q/t']))
  })

  it('stops delivering to a member once it unsubscribes from the group', async () => {
    const [leaving, staying] = await members(node(), '$share/g/unsub/t', [5, 4])
    await leaving.client.unsubscribeAsync('$share/g/unsub/t')
    const pub = await connect(node(), { protocolVersion: 5 })
    const sent = await publishMany(pub, 'unsub/t', 'after', 10)
    await waitFor(() => staying.messages.length >= 10, 'all deliveries to the remaining member')
    expect(staying.messages.map(m => m.payload.toString())).toEqual(sent)
    expect(leaving.messages).toHaveLength(0)
  })

  it('does not send retained messages to a new shared subscription', async () => {
    const pub = await connect(node(), { protocolVersion: 5 })
    await pub.publishAsync('retained/shared/t', 'retained', { qos: 1, retain: true })
    try {
      // a plain subscriber on another connection gets it: the message is there to be sent
      const [plain] = await members(node(), 'retained/shared/t', [5])
      await waitFor(() => plain.messages.length > 0, 'the retained message at a plain subscriber')
      expect(plain.messages[0].packet.retain).toBe(true)

      // MQTT 5.0 §3.3.1.3: retained messages go to new Non-shared Subscriptions only
      const [member] = await members(node(), '$share/g/retained/shared/t', [5])
      await pub.publishAsync('retained/shared/t', 'live', { qos: 1 })
      await waitFor(() => member.messages.length > 0, 'the live message')
      expect(member.messages.map(m => m.payload.toString())).toEqual(['live'])
    } finally {
      await pub.publishAsync('retained/shared/t', '', { qos: 1, retain: true })
    }
  })

  function persistentSession (protocolVersion: 4 | 5, clientId: string): IClientOptions {
    return protocolVersion === 5
      ? { protocolVersion, clientId, clean: false, properties: { sessionExpiryInterval: 60 } }
      : { protocolVersion, clientId, clean: false }
  }

  it.each([5, 4] as const)('delivers QoS 1 messages to an MQTT v%i member with a persistent session', async (protocolVersion) => {
    const member = await open(node(), persistentSession(protocolVersion, `shared-qos1-${protocolVersion}`))
    await member.client.subscribeAsync(`$share/g/persistent/qos1/${protocolVersion}`, { qos: 1 })
    const pub = await connect(node(), { protocolVersion: 5 })
    await pub.publishAsync(`persistent/qos1/${protocolVersion}`, 'qos 1', { qos: 1 })
    await waitFor(() => member.messages.length > 0 || member.closed(), 'the message (or the member\'s connection closing)')
    expect(member.closed()).toBe(false)
    expect(member.messages.map(m => [m.payload.toString(), m.packet.qos])).toEqual([['qos 1', 1]])
  })

  it.each([5, 4] as const)('keeps the shared subscription of an MQTT v%i persistent session across a reconnect', async (protocolVersion) => {
    const session = persistentSession(protocolVersion, `shared-persist-${protocolVersion}`)
    const filter = `$share/g/persist/${protocolVersion}`
    const first = await open(node(), session)
    await first.client.subscribeAsync(filter, { qos: 1 })
    await leave(first.client)

    const again = await open(node(), session)
    expect(again.connack.sessionPresent).toBe(true)
    const pub = await connect(node(), { protocolVersion: 5 })
    const arrived = nextMessage(again.client)
    // QoS 0: this checks the restored subscription only (QoS 1 delivery to a persistent member has its own test)
    await pub.publishAsync(`persist/${protocolVersion}`, 'after reconnect', { qos: 0 })
    const msg = await arrived
    expect([msg.topic, msg.payload.toString()]).toEqual([`persist/${protocolVersion}`, 'after reconnect'])
  })
})

describe('round_robin strategy', () => {
  const node = nodeWith({ 'broker.shared_subscription_strategy': 'round_robin' })

  it('spreads 30 messages 10/10/10 over 3 members', async () => {
    const g = await members(node(), '$share/rr/t/#', [5, 4, 5])
    const pub = await connect(node(), { protocolVersion: 5 })
    const sent = await publishMany(pub, 't/rr', 'rr', 30)
    await waitFor(() => received(g).length >= 30, 'all deliveries')
    expect(received(g).sort()).toEqual([...sent].sort())
    expect(counts(g, 'rr')).toEqual([10, 10, 10])
  })
})

describe('sticky strategy', () => {
  const node = nodeWith({ 'broker.shared_subscription_strategy': 'sticky' })

  it('sends every message to one member until it leaves, then every message to one other member', async () => {
    const watcher = await open(node(), { protocolVersion: 5 })
    await watcher.client.subscribeAsync('sticky/left', { qos: 1 })
    const g: Opened[] = []
    for (const [i, protocolVersion] of ([5, 4, 5] as const).entries()) {
      // each member's will tells the watcher when the broker has dropped it (after its subscriptions)
      const m = await open(node(), { protocolVersion, will: { topic: 'sticky/left', payload: Buffer.from(String(i)), qos: 1, retain: false } })
      await m.client.subscribeAsync('$share/st/sticky/t', { qos: 1 })
      g.push(m)
    }
    const pub = await connect(node(), { protocolVersion: 5 })
    await publishMany(pub, 'sticky/t', 'first', 10)
    await waitFor(() => received(g, 'first').length >= 10, 'the first 10 messages')
    const firstCounts = counts(g, 'first')
    expect([...firstCounts].sort((a, b) => a - b)).toEqual([0, 0, 10])

    const chosen = firstCounts.indexOf(10)
    g[chosen].client.end(true) // no DISCONNECT: the broker publishes its will once it has dropped it
    await waitFor(() => watcher.messages.length > 0, 'the chosen member to be dropped')
    expect(watcher.messages[0].payload.toString()).toBe(String(chosen))

    await publishMany(pub, 'sticky/t', 'second', 10)
    await waitFor(() => received(g, 'second').length >= 10, 'the next 10 messages')
    const secondCounts = counts(g, 'second')
    expect(secondCounts[chosen]).toBe(0)
    expect([...secondCounts].sort((a, b) => a - b)).toEqual([0, 0, 10])
  })
})

describe('hash strategy', () => {
  const node = nodeWith({ 'broker.shared_subscription_strategy': 'hash' })

  it('sends all messages of one publisher to the same member', async () => {
    const g = await members(node(), '$share/hs/hash/t', [5, 4, 5])
    const publishers = ['pub-a', 'pub-b', 'pub-c', 'pub-d', 'pub-e', 'pub-f', 'pub-g', 'pub-h']
    for (const clientId of publishers) {
      const pub = await connect(node(), { protocolVersion: 5, clientId })
      await publishMany(pub, 'hash/t', clientId, 5)
    }
    await waitFor(() => received(g).length >= publishers.length * 5, 'all deliveries')
    const memberOf = new Map<string, number>()
    for (const clientId of publishers) {
      const perMember = counts(g, `${clientId}-`)
      expect([...perMember].sort((a, b) => a - b)).toEqual([0, 0, 5])
      memberOf.set(clientId, perMember.indexOf(5))
    }
    // the publishers are spread over more than one member
    expect(new Set(memberOf.values()).size).toBeGreaterThan(1)
  })
})

describe('mqtt.shared_subscription = false', () => {
  const node = nodeWith({ 'mqtt.shared_subscription': 'false' })

  it('says Shared Subscription Available = false in CONNACK', async () => {
    const { connack } = await open(node(), { protocolVersion: 5 })
    expect(connack.properties?.sharedSubscriptionAvailable).toBe(false)
  })

  it('MQTT v5: a SUBSCRIBE to $share/g/t/# is a Protocol Error once the CONNACK said so: DISCONNECT 0x9E (3.2.2.3.13)', async () => {
    const opened = await open(node(), { protocolVersion: 5 })
    opened.client.subscribe('$share/g/t/#', () => undefined)
    await waitFor(() => opened.closed(), 'the close')
    expect(opened.disconnect()?.reasonCode).toBe(0x9e)
  })

  it('MQTT v4: refuses $share/g/t/# with 0x80', async () => {
    const { client } = await open(node(), { protocolVersion: 4 })
    expect(await suback(client, '$share/g/t/#')).toEqual([0x80])
  })
})
