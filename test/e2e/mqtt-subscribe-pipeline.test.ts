/**
 * SUBSCRIBE packets pipelined in one write, as a client restoring thousands of subscriptions
 * sends them: each SUBACK answers its own packet with one reason code per filter, in order
 * ([MQTT-3.9.3-1], MQTT 5.0 §3.9.3, MQTT 3.1.1 §3.9.3), whatever else is pending. Refused
 * filters sit in the middle of the burst, some repeated in many packets at once: invalid
 * (0x8F), shared subscriptions off (0x9E), wildcards off (0xA2), denied by the ACL (0x80);
 * MQTT 3.1.1 answers 0x80 for each. (An MQTT 5 client that uses a feature that is off is
 * disconnected instead: see mqtt-reason-codes.test.ts; here only 3.1.1 meets them.)
 *
 * Regression for the wire looking refused filters up by scanning every pending SUBSCRIBE
 * (quadratic in a burst): the lookup must still find each refused filter and only those. A
 * refused filter it missed would still get its code in the SUBACK (patched on the way out)
 * but would be subscribed as well, so the client's subscriptions are checked too.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqttPacket from 'mqtt-packet'
import { API_AUTH, connect, closeClients, startTestNode, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, openRawSession, type RawClient } from '../helpers/mqtt.js'

afterEach(async () => {
  await closeOpened()
  await closeClients()
})

/** SUBSCRIBE packets in the burst, and filters in each. */
const PACKETS = 300
const FILTERS = 20

/** What a filter of the burst is, and so what its SUBACK code must be. */
type Kind = 'granted' | 'invalid' | 'shared' | 'wildcard' | 'denied'

/** The MQTT 5 reason code of each refusal (MQTT 3.1.1 has 0x80 for all). */
const V5_CODE: Record<Exclude<Kind, 'granted'>, number> = { invalid: 0x8f, shared: 0x9e, wildcard: 0xa2, denied: 0x80 }

interface Entry { topic: string, qos: 0 | 1 | 2, kind: Kind }

/**
 * The filters of packet `p` (0-based): packets in the middle third carry the `refused` kinds,
 * one at every third filter, and the same invalid filter at position 0 of each of them (so
 * one refused filter is pending in a hundred SUBSCRIBEs at once). `plain` builds the granted
 * filters without wildcards (for a node with wildcards off).
 */
function packetFilters (p: number, refused: Array<Exclude<Kind, 'granted'>>, plain: boolean): Entry[] {
  const middle = p >= PACKETS / 3 && p < 2 * PACKETS / 3
  const entries: Entry[] = []
  for (let f = 0; f < FILTERS; f++) {
    const qos = ((p + f) % 3) as 0 | 1 | 2
    const kind: Kind = !middle ? 'granted' : f === 0 ? 'invalid' : f % 3 === 0 ? refused[(p + f) % refused.length] : 'granted'
    const topic = f === 0 && middle
      ? 'pipeline/#/again'
      : ({
          granted: plain ? `pipeline/${p}/${f}` : `pipeline/${p}/${f}/+`,
          invalid: `pipeline/${p}/#/${f}`,
          shared: `$share/g/pipeline/${p}/${f}`,
          wildcard: `pipeline/${p}/${f}/#`,
          denied: `secret/${p}/${f}`
        })[kind]
    entries.push({ topic, qos, kind })
  }
  return entries
}

/**
 * Writes PACKETS SUBSCRIBEs (packet ids 1..PACKETS) in one write and resolves with the SUBACK
 * codes by packet id, once all have arrived (in whatever order the broker sent them).
 */
async function pipeline (raw: RawClient, protocolVersion: 4 | 5, burst: Entry[][]): Promise<Map<number, number[]>> {
  const frames = burst.map((entries, p) => mqttPacket.generate({
    cmd: 'subscribe', messageId: p + 1, subscriptions: entries.map(({ topic, qos }) => ({ topic, qos }))
  } as any, { protocolVersion }))
  raw.write(Buffer.concat(frames))
  const subacks = (): any[] => raw.packets.filter(p => p.cmd === 'suback')
  await waitFor(() => subacks().length >= burst.length || raw.closed(), `${burst.length} SUBACKs`, 20000)
  return new Map(subacks().map(s => [s.messageId, s.granted]))
}

/** Checks every SUBACK of the burst (`count` of them): refused filters by their kind, the others granted at their QoS. */
function expectCodes (got: Map<number, number[]>, protocolVersion: 4 | 5, burst: Entry[][], count = PACKETS): void {
  const expected = new Map(burst.map((entries, p) => [p + 1, entries.map(({ kind, qos }) =>
    kind === 'granted' ? qos : protocolVersion === 5 ? V5_CODE[kind] : 0x80)]))
  expect(got.size).toBe(count)
  expect(got).toEqual(expected)
}

/** The topics of `clientId`'s subscriptions, as the management API lists them, sorted. */
async function subscribedTopics (node: TestNode, clientId: string): Promise<string[]> {
  const res = await fetch(`http://127.0.0.1:${node.api.server!.port}/api/v3/subscriptions/${clientId}`, { headers: { authorization: API_AUTH } })
  const body: any = await res.json()
  return body.data.map((s: any) => s.topic).sort()
}

/** The filters of the burst that must have been subscribed, sorted. */
function grantedTopics (burst: Entry[][]): string[] {
  return [...new Set(burst.flat().filter(e => e.kind === 'granted').map(e => e.topic))].sort()
}

/** Proves a granted filter from the middle of the burst delivers to `raw`. */
async function delivers (node: TestNode, raw: RawClient, protocolVersion: 4 | 5, topic: string): Promise<void> {
  const pub = await connect(node, { protocolVersion })
  await pub.publishAsync(topic, 'after the burst', { qos: 1 })
  const msg = await raw.next('publish')
  expect([msg?.topic, msg?.payload.toString()]).toEqual([topic, 'after the burst'])
}

describe('pipelined SUBSCRIBEs with invalid and ACL-denied filters', () => {
  let node: TestNode
  let dir: string
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'starling-acl-'))
    const aclFile = join(dir, 'acl.conf')
    writeFileSync(aclFile, '{deny, all, subscribe, ["secret/#"]}.\n{allow, all}.\n')
    node = await startTestNode({ acl_file: aclFile })
  })
  afterAll(async () => {
    await node.services.acl.stop()
    await node.destroy()
    rmSync(dir, { recursive: true, force: true })
  })

  it.each([5, 4] as const)('MQTT v%i: answers every filter of every SUBACK right, the refused ones in the middle included, and subscribes only the granted ones', async (protocolVersion) => {
    const burst = Array.from({ length: PACKETS }, (_, p) => packetFilters(p, ['invalid', 'denied'], false))
    const raw = await openRawSession(node, protocolVersion, `pipeline-acl-${protocolVersion}`)
    expectCodes(await pipeline(raw, protocolVersion, burst), protocolVersion, burst)
    expect(await subscribedTopics(node, `pipeline-acl-${protocolVersion}`)).toEqual(grantedTopics(burst))
    expect(raw.closed()).toBe(false)
    await delivers(node, raw, protocolVersion, `pipeline/${PACKETS / 2}/1/x`)
  })
})

describe('pipelined SUBSCRIBEs with mqtt.shared_subscription and mqtt.wildcard_subscription off', () => {
  let node: TestNode
  beforeAll(async () => {
    node = await startTestNode({ 'mqtt.shared_subscription': 'false', 'mqtt.wildcard_subscription': 'false' })
  })
  afterAll(async () => { await node.destroy() })

  it('MQTT v5: every SUBSCRIBE before the first that uses a feature that is off is answered, then DISCONNECT with its code', async () => {
    const burst = Array.from({ length: PACKETS }, (_, p) => packetFilters(p, ['shared', 'wildcard', 'invalid'], true))
    // the first SUBSCRIBE with a shared or wildcard filter, and the code its first such filter gets
    const first = burst.findIndex(entries => entries.some(e => e.kind === 'shared' || e.kind === 'wildcard'))
    const code = V5_CODE[burst[first].find(e => e.kind === 'shared' || e.kind === 'wildcard')!.kind as 'shared' | 'wildcard']
    const raw = await openRawSession(node, 5, 'pipeline-off-v5')
    const got = await pipeline(raw, 5, burst)
    await waitFor(() => raw.closed(), 'the close')
    expect(raw.packets.filter(p => p.cmd === 'disconnect').map(p => p.reasonCode)).toEqual([code])
    expect(raw.packets[raw.packets.length - 1].cmd).toBe('disconnect')
    expectCodes(new Map([...got].filter(([id]) => id <= first)), 5, burst.slice(0, first), first)
  })

  it.each([4] as const)('MQTT v%i: answers every filter of every SUBACK right, the refused ones in the middle included, and subscribes only the granted ones', async (protocolVersion) => {
    const burst = Array.from({ length: PACKETS }, (_, p) => packetFilters(p, ['shared', 'wildcard', 'invalid'], true))
    const raw = await openRawSession(node, protocolVersion, `pipeline-off-${protocolVersion}`)
    expectCodes(await pipeline(raw, protocolVersion, burst), protocolVersion, burst)
    expect(await subscribedTopics(node, `pipeline-off-${protocolVersion}`)).toEqual(grantedTopics(burst))
    expect(raw.closed()).toBe(false)
    await delivers(node, raw, protocolVersion, `pipeline/${PACKETS / 2}/1`)
  })
})

describe('the same filter pipelined in several SUBSCRIBEs with mqtt.max_qos_allowed = 1', () => {
  let node: TestNode
  beforeAll(async () => {
    node = await startTestNode({ 'mqtt.max_qos_allowed': '1' })
  })
  afterAll(async () => { await node.destroy() })

  it.each([5, 4] as const)('MQTT v%i: each copy is granted at QoS 1 (a downgrade is not a refusal of the copies behind it)', async (protocolVersion) => {
    const raw = await openRawSession(node, protocolVersion, `pipeline-qos-${protocolVersion}`)
    const frames = [1, 2, 3].map(messageId => mqttPacket.generate({
      cmd: 'subscribe', messageId, subscriptions: [{ topic: 'q/t', qos: 2 }]
    } as any, { protocolVersion }))
    raw.write(Buffer.concat(frames))
    const subacks = (): any[] => raw.packets.filter(p => p.cmd === 'suback')
    await waitFor(() => subacks().length >= 3 || raw.closed(), 'three SUBACKs')
    // in whatever order the SUBACKs came, each granted at QoS 1
    expect(subacks().map(s => [s.messageId, s.granted]).sort((x, y) => x[0] - y[0])).toEqual([[1, [1]], [2, [1]], [3, [1]]])
    expect(await subscribedTopics(node, `pipeline-qos-${protocolVersion}`)).toEqual(['q/t'])
  })
})
