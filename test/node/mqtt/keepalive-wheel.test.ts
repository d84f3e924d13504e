/**
 * The shared keep alive wheel (node/mqtt/keepalive-wheel.ts) with stand-ins for aedes
 * clients: a silent client times out as aedes' own timer would, a refreshed one does not,
 * a closed or released one is forgotten. The real clients are in test/e2e/mqtt-session.test.ts
 * and test/e2e/mqtt-max-keepalive.test.ts.
 */
import { EventEmitter } from 'node:events'
import { useKeepaliveWheel, releaseKeepalive, keepaliveEntries, KeepaliveEntry, TICK_MS } from '../../../node/mqtt/keepalive-wheel.js'

/** An aedes client as far as the wheel reads it, with the timer aedes armed at CONNECT. */
function fakeClient (): any {
  const client: any = new EventEmitter()
  client.closed = false
  client.broker = new EventEmitter()
  client.errors = [] as Error[]
  client.on('error', (err: Error) => client.errors.push(err))
  client._keepaliveInterval = 60001
  client._keepaliveTimer = setTimeout(() => { throw new Error('aedes timer should have been cleared') }, 60000)
  return client
}

async function until (predicate: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise(resolve => setTimeout(resolve, 10))
  }
}

describe('keep alive wheel', () => {
  it('times out a silent client between its deadline and one tick later, as aedes would', async () => {
    const client = fakeClient()
    const timeouts: unknown[] = []
    client.broker.on('keepaliveTimeout', (c: unknown) => timeouts.push(c))
    const start = Date.now()
    useKeepaliveWheel(client, 300)
    expect(client._keepaliveTimer).toBeInstanceOf(KeepaliveEntry)
    expect(client._keepaliveInterval).toBe(300)
    await until(() => client.errors.length > 0, 3000)
    const elapsed = Date.now() - start
    expect(elapsed).toBeGreaterThanOrEqual(295)
    expect(elapsed).toBeLessThan(300 + TICK_MS + 400)
    expect(timeouts).toEqual([client])
    expect(client.errors[0].message).toBe('keep alive timeout')
  })

  it('keeps a client that sends packets, and drops it once it stops', async () => {
    const client = fakeClient()
    useKeepaliveWheel(client, 250)
    const start = Date.now()
    while (Date.now() - start < 800) {
      client._keepaliveTimer.refresh()
      await new Promise(resolve => setTimeout(resolve, 50))
    }
    expect(client.errors).toEqual([])
    await until(() => client.errors.length > 0, 3000)
  })

  it('forgets a closed client and a released one without timing them out', async () => {
    const closed = fakeClient()
    const released = fakeClient()
    useKeepaliveWheel(closed, 150)
    useKeepaliveWheel(released, 150)
    closed.closed = true
    releaseKeepalive(released)
    await until(() => keepaliveEntries() === 0, 3000)
    expect(closed.errors).toEqual([])
    expect(released.errors).toEqual([])
  })

  it('keeps one entry when the keep alive is set again to a longer one, and times out on the longer one', async () => {
    await until(() => keepaliveEntries() === 0, 3000)
    const client = fakeClient()
    const start = Date.now()
    useKeepaliveWheel(client, 150)
    const entry = client._keepaliveTimer
    useKeepaliveWheel(client, 400)
    expect(client._keepaliveTimer).toBe(entry)
    expect(client._keepaliveInterval).toBe(400)
    expect(keepaliveEntries()).toBe(1)
    await until(() => client.errors.length > 0, 3000)
    expect(Date.now() - start).toBeGreaterThanOrEqual(395)
    // a shorter one needs an entry filed for its earlier deadline, unless both fall in one tick
    const other = fakeClient()
    useKeepaliveWheel(other, 400)
    const first = other._keepaliveTimer
    useKeepaliveWheel(other, 150)
    expect(other._keepaliveTimer).not.toBe(first)
    await until(() => other.errors.length > 0, 3000)
  })
})
