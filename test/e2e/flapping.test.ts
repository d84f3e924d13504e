/**
 * Flapping detection over the wire (issue 22, EMQ X 4.4's keys): a real mqtt.js client in a
 * reconnect loop is banned by client id once it disconnects more than `<count>` times within
 * `<window>`; the ban shows in the banned list with EMQ X's `by` and reason, the alarm
 * `flapping/<client id>` is raised (and published on `$SYS/brokers/<node>/alarms/activate`),
 * other clients still connect, and after `<ban time>` the client connects again and the
 * alarm clears. Off (the default), the same loop is never banned.
 */
import { apiRequest, startTestNode, closeClients, connect, waitFor, nextMessage, type TestNode } from '../helpers/node.js'
import { closeOpened, refusedConnack } from '../helpers/mqtt.js'
import { FLAPPING_BANNED_BY, FLAPPING_REASON } from '../../node/flapping/index.js'

/** Connects and disconnects `clientId` cleanly `times` times. */
async function loop (node: TestNode, clientId: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    const c = await connect(node, { clientId, protocolVersion: 5 })
    await new Promise<void>(resolve => c.end(false, {}, () => resolve()))
  }
}

afterEach(async () => {
  await closeClients()
  await closeOpened()
})

describe('flapping detection on', () => {
  let node: TestNode
  beforeAll(async () => {
    node = await startTestNode({ 'zone.external.enable_flapping_detect': 'on', flapping_detect_policy: '3, 10s, 2s' })
  })
  afterAll(async () => { await node.destroy() })

  it('bans a client that disconnects more than 3 times in 10 s for 2 s, with the alarm, and lets it back after', async () => {
    const watcher = await connect(node, { clientId: 'flap-watcher', protocolVersion: 5 })
    await new Promise<void>((resolve, reject) => watcher.subscribe('$SYS/brokers/+/alarms/activate', { qos: 0 }, (err) => err ? reject(err) : resolve()))
    const activated = nextMessage(watcher, 10_000)

    await loop(node, 'flapper', 4)
    await waitFor(() => node.services.banned.lookup('flapper', 'client_id') !== undefined, 'the ban', 5000)
    const entry = node.services.banned.lookup('flapper', 'client_id')!
    expect(entry).toMatchObject({ by: FLAPPING_BANNED_BY, reason: FLAPPING_REASON })
    expect(entry.until * 1000).toBeGreaterThan(Date.now())
    expect((await refusedConnack(node, { clientId: 'flapper', protocolVersion: 5 }))?.reasonCode).toBe(0x8a)
    // another client is not affected
    await connect(node, { clientId: 'steady', protocolVersion: 5 })

    const alarm = node.services.alarms.present().find(a => a.id === 'flapping/flapper')
    expect(alarm?.details).toMatchObject({ clientid: 'flapper', disconnects: 4 })
    const published = JSON.parse((await activated).payload.toString())
    expect(published).toMatchObject({ id: 'flapping/flapper' })

    await waitFor(() => node.services.banned.lookup('flapper', 'client_id') === undefined, 'the ban to end', 5000)
    await waitFor(() => !node.services.alarms.isActive('flapping/flapper'), 'the alarm to clear', 5000)
    await connect(node, { clientId: 'flapper', protocolVersion: 5 })
  }, 20_000)

  it('applies a policy changed through the API at once: disconnects spread wider than the window are not banned', async () => {
    const changed = await apiRequest(node, '/configs/starling', 'PUT', { flapping_detect_policy: '3, 1ms, 2s' })
    expect(changed.data[0].applied).toEqual(['flapping_detect_policy'])
    try {
      await loop(node, 'slow-flapper', 5)
      expect(node.services.banned.lookup('slow-flapper', 'client_id')).toBeUndefined()
    } finally {
      await apiRequest(node, '/configs/starling', 'PUT', { flapping_detect_policy: '3, 10s, 2s' })
    }
  })
})

describe('flapping detection off (the default)', () => {
  let node: TestNode
  beforeAll(async () => { node = await startTestNode({ flapping_detect_policy: '1, 10s, 1m' }) })
  afterAll(async () => { await node.destroy() })

  it('never bans', async () => {
    await loop(node, 'free-flapper', 4)
    await connect(node, { clientId: 'free-flapper', protocolVersion: 5 })
    expect(node.services.banned.list()).toEqual([])
  })
})

it('refuses a policy that is not <count>, <window>, <ban time> at start, naming the key', async () => {
  await expect(startTestNode({ flapping_detect_policy: '30 per minute' })).rejects.toThrow(/flapping_detect_policy/)
})
