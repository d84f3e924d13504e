import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import mqtt, { type MqttClient } from 'mqtt'

const RELAY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/bench/brokers/bare-relay.js')

describe('bench bare relay (Node.js floor for the latency scenario)', () => {
  let relay: ChildProcess
  let port = 0
  const clients: MqttClient[] = []

  beforeAll(async () => {
    relay = spawn(process.execPath, [RELAY, '0'], { stdio: ['ignore', 'pipe', 'inherit'] })
    port = await new Promise<number>((resolve, reject) => {
      relay.stdout!.setEncoding('utf8').once('data', (line: string) => resolve(Number(line.trim())))
      relay.once('exit', (code) => reject(new Error(`relay exited with ${code}`)))
    })
  })

  afterAll(async () => {
    await Promise.all(clients.map(async (c) => await c.endAsync(true)))
    relay.kill('SIGKILL')
  })

  async function client (): Promise<MqttClient> {
    const c = await mqtt.connectAsync({ host: '127.0.0.1', port, reconnectPeriod: 0, connectTimeout: 5000 })
    clients.push(c)
    return c
  }

  it('answers CONNECT and SUBSCRIBE and copies PUBLISHes, QoS 0 and 1, to the subscriber', async () => {
    const sub = await client()
    await sub.subscribeAsync('l/one', { qos: 0 })
    const got: string[] = []
    const both = new Promise<void>((resolve) => sub.on('message', (_t, payload) => { got.push(payload.toString()); if (got.length === 2) resolve() }))
    const pub = await client()
    await pub.publishAsync('l/one', 'a', { qos: 0 })
    await pub.publishAsync('l/one', 'b', { qos: 1 }) // resolves on the relay's PUBACK
    await both
    expect(got).toEqual(['a', 'b'])
  })
})
