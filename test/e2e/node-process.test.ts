/**
 * The node as an operator runs it: `node bin/starling` as a child process, signals, restarts
 * on the same data directory, and configuration errors. Needs `dist/` (`npm run build`).
 */
import net from 'node:net'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { MqttClient } from 'mqtt'
import { waitFor } from '../helpers/node.js'
import {
  spawnNode, stopNode, killAllNodes, connectTo, closeProcessClients, runProgram, tempDir,
  within, EPHEMERAL_ENV, type NodeProcess
} from '../helpers/process.js'

afterEach(async () => { await closeProcessClients() })
afterAll(async () => { await killAllNodes() })

/** Resolves with the DISCONNECT packet the server sends to `client`. */
function serverDisconnect (client: MqttClient): Promise<any> {
  return new Promise(resolve => client.once('disconnect', packet => resolve(packet)))
}

/** Resolves once the client's connection has closed. */
function closed (client: MqttClient): Promise<void> {
  return new Promise(resolve => {
    if (!client.connected) return resolve()
    client.once('close', () => resolve())
  })
}

describe.each(['SIGTERM', 'SIGINT'] as const)('on %s', (signal) => {
  it('sends DISCONNECT 0x8B (server shutting down) to MQTT 5 clients and exits with code 0', async () => {
    const node = await spawnNode()
    const v5 = await connectTo(node.port('mqtt:tcp'), { protocolVersion: 5, clientId: `v5-${signal}` })
    const v311 = await connectTo(node.port('mqtt:tcp'), { protocolVersion: 4, clientId: `v4-${signal}` })
    const disconnect = serverDisconnect(v5)
    const v311Closed = closed(v311)
    node.kill(signal)
    expect((await within(disconnect, 10000, `DISCONNECT to the MQTT 5 client after ${signal}`)).reasonCode).toBe(0x8b)
    // MQTT 3.1.1 has no server DISCONNECT: the connection is just closed
    await within(v311Closed, 10000, `closing the MQTT 3.1.1 connection after ${signal}`)
    expect(await within(node.exited, 10000, `exit after ${signal}`)).toEqual({ code: 0, signal: null })
    expect(node.stderr()).toBe('')
  })
})

describe.each([
  ['3.1.1', { protocolVersion: 4 as const }],
  ['5', { protocolVersion: 5 as const, properties: { sessionExpiryInterval: 3600 } }]
])('restart on the same data directory (MQTT %s)', (name, version) => {
  it('keeps retained messages and the queued QoS 1 messages of a persistent session across a clean stop and start', async () => {
    const first = await spawnNode()
    const clientId = `persistent-${name}`
    const sub = await connectTo(first.port('mqtt:tcp'), { ...version, clientId, clean: false })
    await sub.subscribeAsync(`queued/${name}`, { qos: 1 })
    await sub.endAsync()
    const pub = await connectTo(first.port('mqtt:tcp'), version)
    await pub.publishAsync(`retained/${name}`, 'kept', { qos: 1, retain: true })
    for (let i = 0; i < 5; i++) await pub.publishAsync(`queued/${name}`, `m${i}`, { qos: 1 })
    await pub.endAsync()
    expect(await within(stopNode(first), 10000, 'exit after SIGTERM')).toEqual({ code: 0, signal: null })

    const second = await spawnNode({ dataDir: first.dataDir, env: { STARLING_MQTT__MAX_AWAITING_REL: '0' } })
    const got: string[] = []
    let sessionPresent: boolean | undefined
    await connectTo(second.port('mqtt:tcp'), { ...version, clientId, clean: false }, c => {
      c.on('message', (_t, payload) => got.push(payload.toString()))
      c.once('connect', connack => { sessionPresent = connack.sessionPresent })
    })
    expect(sessionPresent).toBe(true)
    await waitFor(() => got.length >= 5, 'the queued messages').catch(() => {})
    expect(got).toEqual(['m0', 'm1', 'm2', 'm3', 'm4'])

    const late = await connectTo(second.port('mqtt:tcp'), version)
    const retained = new Promise<any>(resolve => late.once('message', (topic, payload, packet) => resolve({ topic, payload: payload.toString(), retain: packet.retain })))
    await late.subscribeAsync(`retained/${name}`, { qos: 1 })
    expect(await retained).toEqual({ topic: `retained/${name}`, payload: 'kept', retain: true })
  })
})

describe.each([1, 2] as const)('SIGKILL right after the last acknowledgement (QoS %i)', (qos) => {
  it('loses none of 200 acknowledged messages queued for an offline persistent session', async () => {
    const N = 200
    const topic = `durable/q${qos}`
    const clientId = `durable-sub-${qos}`
    // 200 QoS 2 messages in flight at once from one 3.1.1 client: above mqtt.max_awaiting_rel
    // (100) such a client is disconnected unacknowledged (docs/mqtt.md), so no limit here
    const first = await spawnNode({ env: { STARLING_MQTT__MAX_AWAITING_REL: '0' } })
    const sub = await connectTo(first.port('mqtt:tcp'), { protocolVersion: 4, clientId, clean: false })
    await sub.subscribeAsync(topic, { qos })
    await sub.endAsync()
    const pub = await connectTo(first.port('mqtt:tcp'), { protocolVersion: 4, clientId: `durable-pub-${qos}` })
    // each publishAsync resolves on that message's PUBACK (QoS 1) / PUBCOMP (QoS 2)
    await Promise.all(Array.from({ length: N }, (_, i) => pub.publishAsync(topic, String(i), { qos })))
    first.kill('SIGKILL')
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' })

    const second = await spawnNode({ dataDir: first.dataDir, env: { STARLING_MQTT__MAX_AWAITING_REL: '0' } })
    const counts = new Map<string, number>()
    await connectTo(second.port('mqtt:tcp'), { protocolVersion: 4, clientId, clean: false }, c => {
      c.on('message', (_t, payload) => counts.set(payload.toString(), (counts.get(payload.toString()) ?? 0) + 1))
    })
    await waitFor(() => counts.size >= N, `${N} messages`, 20000).catch(() => {})
    const missing = Array.from({ length: N }, (_, i) => String(i)).filter(p => !counts.has(p))
    expect(missing).toEqual([])
    if (qos === 2) {
      // exactly once: the subscriber was offline throughout, so nothing is a redelivery
      expect([...counts].filter(([, n]) => n !== 1)).toEqual([])
    }
  })
})

describe('configuration errors', () => {
  /** The one line of a config error, or all of stderr if there are more. */
  function errorLines (stderr: string): string[] {
    return stderr.split('\n').filter(l => l.trim() !== '')
  }

  it('refuses an unknown key in a --config file: exit code 1 and one stderr line naming the key', async () => {
    const dir = tempDir()
    const file = join(dir, 'bad.conf')
    writeFileSync(file, 'node.name = starling@127.0.0.1\nlistener.tcp.external.bogus_knob = 7\n')
    const run = await runProgram('bin/starling', ['--config', file], { ...EPHEMERAL_ENV, STARLING_NODE__DATA_DIR: dir }, 10000)
    expect(run.code).toBe(1)
    const lines = errorLines(run.stderr)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('listener.tcp.external.bogus_knob')
    expect(run.stdout).not.toContain('listener started')
  })

  it.each([
    'listener.tcp.external', 'listener.ssl.external', 'listener.ws.external', 'listener.wss.external',
    'management.listener.http', 'cluster.listen'
  ])('stops the start when %s cannot bind: exit code 1 and one line naming the key, the address and the reason', async (key) => {
    const taken = net.createServer()
    await new Promise<void>(resolve => taken.listen(0, '127.0.0.1', resolve))
    const address = `127.0.0.1:${(taken.address() as net.AddressInfo).port}`
    try {
      const variable = 'STARLING_' + key.toUpperCase().replace(/\./g, '__')
      const run = await runProgram('bin/starling', [], { ...EPHEMERAL_ENV, STARLING_NODE__DATA_DIR: tempDir(), [variable]: address }, 15000)
      expect(run.code).toBe(1)
      expect(errorLines(run.stderr)).toEqual([`starling: cannot listen on ${address} (${key}): address already in use`])
      // nothing says it runs, and no stack or library advice reaches the operator
      expect(run.stdout).not.toContain('is running now')
      expect(run.stdout + run.stderr).not.toMatch(/\bat \S+ \(|faultTolerance/)
    } finally {
      taken.close()
    }
  })

  it('refuses a bad value from the environment: exit code 1 and one stderr line naming the key and the value', async () => {
    const run = await runProgram('bin/starling', [], {
      ...EPHEMERAL_ENV, STARLING_NODE__DATA_DIR: tempDir(), STARLING_MQTT__MAX_PACKET_SIZE: 'abc'
    }, 10000)
    expect(run.code).toBe(1)
    const lines = errorLines(run.stderr)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/mqtt\.max_packet_size|STARLING_MQTT__MAX_PACKET_SIZE/)
    expect(lines[0]).toContain('abc')
    expect(run.stdout).not.toContain('listener started')
  })

  it('binds an ephemeral port for an address with port 0 from the environment and logs the port it got', async () => {
    const node: NodeProcess = await spawnNode({ env: { STARLING_LISTENER__TCP__EXTERNAL: '127.0.0.1:0' } })
    const line = node.logLines().find(l => l.msg === 'listener started' && l.protocol === 'mqtt:tcp')
    expect(line).toMatchObject({ host: '127.0.0.1' })
    expect(line!.port).toBeGreaterThan(0)
    // the logged port is the one that accepts MQTT connections
    const client = await connectTo(line!.port, { protocolVersion: 4 })
    expect(client.connected).toBe(true)
    // and the console says it whatever the log level, as EMQ X does
    expect(node.stdout()).toContain(`Start mqtt:tcp listener on 127.0.0.1:${line!.port} successfully.`)
  })

  it('says where the cluster listener listens at start, with the port it got for port 0', async () => {
    const node: NodeProcess = await spawnNode({ env: { STARLING_CLUSTER__LISTEN: '127.0.0.1:0' } })
    const banner = /Start cluster listener on 127\.0\.0\.1:(\d+) successfully\./.exec(node.stdout())
    expect(banner).not.toBeNull()
    expect(Number(banner![1])).toBeGreaterThan(0)
  })
})
