/**
 * Forwarding under load (issue 13, item 2), with two `bin/starling` processes: messages
 * forwarded to another node are not counted as dropped on the publishing node, and a flood
 * at a node that stops reading its link (SIGSTOP) pauses the publishers or drops with a
 * counted reason: the publishing node stays alive and every message is either delivered or
 * counted in `messages/dropped` on one of the two nodes.
 */
import type { MqttClient } from 'mqtt'
import { spawnNode, killAllNodes, tempDir, connectTo, closeProcessClients, type NodeProcess } from '../helpers/process.js'
import { runCtlOn } from '../helpers/ctl.js'
import { API_AUTH, freePort } from '../helpers/node.js'

interface Member { name: string, port: number, dataDir: string, proc: NodeProcess }

let a: Member
let b: Member

async function member (name: string): Promise<Member> {
  const port = await freePort()
  const dataDir = tempDir()
  const proc = await spawnNode({ dataDir, env: { STARLING_NODE__NAME: name, STARLING_CLUSTER__LISTEN: `127.0.0.1:${port}` } })
  return { name, port, dataDir, proc }
}

async function metrics (m: Member): Promise<Record<string, number>> {
  const port = m.proc.logLines().find(l => l.msg === 'listener started' && l.protocol === 'http:management')?.port
  const res = await fetch(`http://127.0.0.1:${port as number}/api/v3/nodes/${encodeURIComponent(m.name)}/metrics`, { headers: { authorization: API_AUTH }, signal: AbortSignal.timeout(3000) }).catch((err: Error) => { throw new Error(`metrics of ${m.name}: ${err.message}`) })
  return ((await res.json()) as { data: Record<string, number> }).data
}

async function eventually (check: () => Promise<string | null>, timeoutMs = 20000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let why: string | null = null
  while ((why = await check()) !== null) {
    if (Date.now() > deadline) throw new Error(why)
    await new Promise(resolve => setTimeout(resolve, 200))
  }
}

/** A subscriber on b to `topic`, counting what it gets; resolves once a message from a reaches it. */
async function subscriberOnB (topic: string, publisher: MqttClient): Promise<{ count: () => number }> {
  let count = 0
  let probes = 0
  const sub = await connectTo(b.proc.port('mqtt:tcp'))
  sub.on('message', (_t, payload) => { if (payload.toString() === 'probe') probes++; else count++ })
  await sub.subscribeAsync(topic, { qos: 0 })
  // the route reaches a on its own: probe until one arrives
  await eventually(async () => {
    publisher.publish(topic, 'probe', { qos: 1 })
    await new Promise(resolve => setTimeout(resolve, 200))
    return probes > 0 ? null : `no message from a reached the subscriber on b (${topic})`
  })
  await new Promise(resolve => setTimeout(resolve, 300))
  return { count: () => count }
}

beforeAll(async () => {
  a = await member('fa@127.0.0.1')
  b = await member('fb@127.0.0.1')
  const joined = await runCtlOn({ dataDir: b.dataDir }, ['cluster', 'join', `${a.name}:${a.port}`])
  if (joined.code !== 0) throw new Error(joined.err)
}, 60000)

afterEach(async () => { await closeProcessClients() })
afterAll(async () => {
  b?.proc.kill('SIGCONT')
  await killAllNodes()
})

test('messages forwarded to subscribers on another node are not counted as dropped where they were published', async () => {
  const pub = await connectTo(a.proc.port('mqtt:tcp'))
  const sub = await subscriberOnB('fwd/counted', pub)
  const before = await metrics(a)
  for (let i = 0; i < 200; i++) pub.publish('fwd/counted', `m${i}`, { qos: 0 })
  await eventually(async () => sub.count() === 200 ? null : `b got ${sub.count()} of 200`)
  const after = await metrics(a)
  expect(after['messages/forward'] - before['messages/forward']).toBe(200)
  expect(after['messages/dropped'] - before['messages/dropped']).toBe(0)
  // a message no node has a subscriber for is still a drop
  pub.publish('fwd/nobody', 'x', { qos: 0 })
  await eventually(async () => (await metrics(a))['messages/dropped'] - after['messages/dropped'] === 1 ? null : 'no drop counted for a message without subscribers')
}, 60000)

test('a flood at a node that stops reading its link leaves the publishing node alive and every message delivered or counted as dropped', async () => {
  const TOTAL = 20000
  const payload = Buffer.alloc(1024, 7)
  const publishers = await Promise.all([0, 1, 2, 3].map(async () => await connectTo(a.proc.port('mqtt:tcp'))))
  const sub = await subscriberOnB('fwd/flood', publishers[0])
  const [a0, b0] = [await metrics(a), await metrics(b)]
  b.proc.kill('SIGSTOP')
  try {
    for (let i = 0; i < TOTAL; i++) publishers[i % publishers.length].publish('fwd/flood', payload, { qos: 0 })
    // b reads nothing for 3 s: the link backs up, a pauses the publishers (or drops, counted)
    await new Promise(resolve => setTimeout(resolve, 3000))
  } finally {
    b.proc.kill('SIGCONT')
  }
  let a1: Record<string, number> = a0
  let b1: Record<string, number> = b0
  await eventually(async () => {
    ;[a1, b1] = [await metrics(a), await metrics(b)]
    const received = a1['messages/received'] - a0['messages/received']
    const accounted = sub.count() + (a1['messages/dropped'] - a0['messages/dropped']) + (b1['messages/dropped'] - b0['messages/dropped'])
    return received === TOTAL && accounted === TOTAL ? null : `a received ${received} of ${TOTAL}; delivered ${sub.count()} + dropped on a ${a1['messages/dropped'] - a0['messages/dropped']} + on b ${b1['messages/dropped'] - b0['messages/dropped']} = ${accounted}`
  }, 40000)
  expect(a.proc.child.exitCode).toBeNull()
  // what a did not drop, it forwarded
  expect((a1['messages/forward'] - a0['messages/forward']) + (a1['messages/dropped'] - a0['messages/dropped'])).toBe(TOTAL)
}, 90000)
