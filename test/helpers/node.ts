import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { loadConfig } from '../../node/config/index.js'
import { silentLogger } from '../../node/logger.js'
import type { StarlingNode } from '../../node/node.js'
import { startStarling, type Starling } from '../../bin/assemble.js'

/** Config overrides every test node gets: ephemeral ports on loopback, never the defaults. */
export const EPHEMERAL: Record<string, string> = {
  'listener.tcp.external': '127.0.0.1:0',
  'listener.ssl.external': '127.0.0.1:0',
  'listener.ws.external': '127.0.0.1:0',
  'listener.wss.external': '127.0.0.1:0',
  'management.listener.http': '127.0.0.1:0',
  'dashboard.listener.http': '127.0.0.1:0',
  'cluster.listen': '127.0.0.1:0',
  // known management API credentials: admin / public (API_AUTH)
  'management.default_application.secret': 'public'
}

/** HTTP Basic credentials of every test node's default API application. */
export const API_AUTH = 'Basic ' + Buffer.from('admin:public').toString('base64')

/** A node started for a test, with its own temporary data directory. */
export interface TestNode extends Starling {
  dataDir: string
  /** Stops the node and deletes its data directory. */
  destroy: () => Promise<void>
}

/**
 * Starts a node on ephemeral ports with a fresh data directory (or `dataDir` to reuse one,
 * e.g. for restart tests). `overrides` are config keys and values as in etc/starling.conf;
 * `init` is passed on to startStarling (every part, as bin/starling): its `etcDir` (plugin files in `<etcDir>/plugins/`,
 * default the project's `etc`) and its `env` for `STARLING_*` plugin keys (default none).
 * `init.plugins` are loaded once the node runs, unless they already are (e.g. a restart
 * whose `data/loaded_plugins` names them).
 */
export async function startTestNode (
  overrides: Record<string, string> = {}, dataDir?: string, init: { env?: Record<string, string>, etcDir?: string, plugins?: string[] } = {}
): Promise<TestNode> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'starling-'))
  const config = loadConfig({ env: {}, overrides: { ...EPHEMERAL, 'node.data_dir': dir, ...overrides } })
  const node = await startStarling(config, { logger: silentLogger(), env: init.env ?? {}, etcDir: init.etcDir })
  for (const name of init.plugins ?? []) {
    if (!node.services.plugins.isActive(name)) await node.services.plugins.load(name)
  }
  return Object.assign(node, {
    dataDir: dir,
    destroy: async () => {
      await node.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }) as TestNode
}

/** Opened clients, closed by {@link closeClients}. */
const opened = new Set<MqttClient>()

/** Connects an mqtt.js client to the node's TCP listener and resolves once CONNACK arrives. */
export async function connect (node: StarlingNode, opts: IClientOptions = {}): Promise<MqttClient> {
  const client = mqtt.connect({
    host: '127.0.0.1',
    port: node.port('mqtt:tcp'),
    reconnectPeriod: 0,
    connectTimeout: 5000,
    ...opts
  })
  opened.add(client)
  return await untilConnack(client)
}

/** Resolves with `client` once its CONNACK (a successful one) arrived; rejects on an error or a close before it. */
export async function untilConnack (client: MqttClient): Promise<MqttClient> {
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve())
    client.once('error', reject)
    client.once('close', () => reject(new Error('connection closed before CONNACK')))
  })
  return client
}

/** Ends every client opened by {@link connect} (forcefully: tests do not wait for DISCONNECT). */
export async function closeClients (): Promise<void> {
  await Promise.all([...opened].map(c => new Promise<void>(resolve => c.end(true, {}, () => resolve()))))
  opened.clear()
}

/** Resolves when `predicate` returns true, checking after each event-loop turn; fails after `timeoutMs`. */
export async function waitFor (predicate: () => boolean, what = 'condition', timeoutMs = 10000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 5))
  }
}

/** A received message as mqtt.js reports it. */
export interface Received { topic: string, payload: Buffer, packet: any }

/** Collects the messages a client receives, in order. */
export function collect (client: MqttClient): Received[] {
  const out: Received[] = []
  client.on('message', (topic, payload, packet) => out.push({ topic, payload, packet }))
  return out
}

/** The payloads, as text, of the collected messages on `topic`, in order. */
export function payloads (messages: Received[], topic: string): string[] {
  return messages.filter(m => m.topic === topic).map(m => m.payload.toString())
}

/** Resolves with the next message the client receives. */
export function nextMessage (client: MqttClient, timeoutMs = 5000): Promise<Received> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no message arrived')), timeoutMs)
    client.once('message', (topic, payload, packet) => { clearTimeout(timer); resolve({ topic, payload, packet }) })
  })
}

/** Calls `node`'s management API as the default application; resolves with the JSON body. */
export async function apiRequest (node: Starling, path: string, method = 'GET', body?: unknown): Promise<any> {
  const res = await fetch(`http://127.0.0.1:${node.api.server!.port}/api/v3${path}`, {
    method,
    headers: { authorization: API_AUTH, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return await res.json()
}

/** A TCP port free on 127.0.0.1, below the kernel's ephemeral range (see ports.ts). */
export { freePort } from './ports.js'
