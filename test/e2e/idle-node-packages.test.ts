/**
 * An idle node loads only what it uses (issue 22, idle memory): no database or client driver
 * (each auth backend imports its driver when it is loaded, svc_bridge_mqtt imports mqtt.js at
 * its first bridge connection), no rule SQL compiler until a rule exists, no avro or protobuf
 * compiler until a schema of that type exists, no Ajv or Express until the first API request, no libp2p
 * until a node joins it or it joins one (its cluster port is open all along). A default
 * node (its default plugins) is started with a module hook that records every package and every
 * module of dist/ it resolves, then stopped.
 *
 * Using a feature loads it, and it works: a schema and a rule created through the API on a
 * running node decode and republish; restarted, the node runs the stored rule with the stored
 * schema from the start, before anything asks its API. A node joining a fresh idle node gets
 * in at the first try, and both load libp2p.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { MqttClient } from 'mqtt'
import { PROJECT_ROOT, closeProcessClients, connectTo, killAllNodes, spawnNode, stopNode, tempDir, type NodeProcess } from '../helpers/process.js'
import { API_AUTH } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'
import { SENSOR_AVSC, avroSensor } from '../schemas/fixtures.js'

/** Drivers only a plugin that uses them may load: about 10 to 30 MB of memory each. */
const DRIVERS = ['pg', 'mysql2', 'ioredis', 'mongodb', 'ldapts', 'undici', 'mqtt']
/**
 * Loaded with their first use: the API's body validators, the avro and protobuf compilers, and
 * Express with what the management API and the dashboard build on it (their listeners are open
 * from the start; the application is built at the first request, node/http-listener.ts), and
 * jose with the first dashboard sign-in.
 */
const ON_FIRST_USE = ['ajv', 'avsc', 'protobufjs', 'express', 'passport', 'passport-http', 'jose']
/**
 * The rule SQL parser, compiler and function table (dist/ modules), loaded with the first rule
 * (the runtime's topic index and payload cache, and the error classes, load with the engine).
 */
const SQL_MODULES = ['dist/rules/sql/index.js', 'dist/rules/sql/lexer.js', 'dist/rules/sql/parser.js', 'dist/rules/sql/compile.js', 'dist/rules/funcs/index.js']
/** libp2p and its services (about 50 MiB), loaded when the mesh is first used (cluster/mesh-door.ts). */
const isLibp2p = (p: string): boolean => p === 'libp2p' || p.startsWith('@libp2p/') || p.startsWith('@chainsafe/') || p === 'dist/cluster/mesh-host.js'

const HOOK = join(PROJECT_ROOT, 'test/helpers/loaded-packages.mjs')

/** A node started with the hook; `loaded()` reads what it resolved, once it stopped. */
async function hookedNode (dataDir: string, env: Record<string, string> = {}): Promise<{ node: NodeProcess, loaded: () => string[] }> {
  const file = join(dataDir, 'packages.txt')
  const node = await spawnNode({ dataDir, env: { ...env, NODE_OPTIONS: `--import ${HOOK}`, LOADED_PACKAGES_FILE: file } })
  return { node, loaded: () => readFileSync(file, 'utf8').split('\n').filter(l => l !== '') }
}

/** The packages and dist/ modules a node loaded from start to stop; `loadedPlugins` is its data/loaded_plugins file. */
async function packagesOf (loadedPlugins?: string): Promise<string[]> {
  const dataDir = tempDir('stpk-')
  if (loadedPlugins !== undefined) writeFileSync(join(dataDir, 'loaded_plugins'), loadedPlugins)
  const { node, loaded } = await hookedNode(dataDir)
  await stopNode(node)
  return loaded()
}

/** Calls the node's management API (the default application admin / public). */
async function api (node: NodeProcess, method: string, path: string, body?: unknown): Promise<any> {
  const port = node.logLines().find(l => l.msg === 'listener started' && l.protocol === 'http:management')?.port
  const res = await fetch(`http://127.0.0.1:${String(port)}/api/v3${path}`, {
    method,
    headers: { authorization: API_AUTH, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return await res.json()
}

/** Publishes an avro sensor reading to `in/1` and resolves with what arrives on `out/#`. */
async function publishReading (node: NodeProcess): Promise<string> {
  const got = new Promise<string>((resolve) => {
    void connectTo(node.port('mqtt:tcp'), { clientId: 'idle-sub' }, (c: MqttClient) => {
      c.on('message', (_topic, payload) => { resolve(payload.toString()) })
    }).then(async (sub) => {
      await sub.subscribeAsync('out/#')
      const pub = await connectTo(node.port('mqtt:tcp'), { clientId: 'idle-pub' })
      await pub.publishAsync('in/1', avroSensor.toBuffer({ id: 'roof', temp: 31.5, hum: 40 }))
    })
  })
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<string>((_resolve, reject) => { timer = setTimeout(() => reject(new Error('no republished message on out/#')), 10_000) })
  try {
    return await Promise.race([got, timeout])
  } finally {
    clearTimeout(timer)
    await closeProcessClients()
  }
}

afterAll(async () => {
  await closeProcessClients()
  await killAllNodes()
})

it('a default node loads none of the drivers, nor the rule SQL compiler, the schema compilers, Ajv or libp2p', async () => {
  const loaded = await packagesOf()
  expect(loaded).toContain('aedes') // the hook saw the node's packages
  expect(loaded).toContain('dist/rules/engine.js') // ... and its own modules
  expect(loaded).toContain('dist/cluster/mesh-door.js') // ... the cluster port among them
  expect(loaded.filter(p => DRIVERS.includes(p) || ON_FIRST_USE.includes(p))).toEqual([])
  expect(loaded.filter(p => SQL_MODULES.includes(p))).toEqual([])
  expect(loaded.filter(isLibp2p)).toEqual([])
}, 30_000)

it('answers GET /status (health checks) without loading Express; the first API request loads it', async () => {
  const { node, loaded } = await hookedNode(tempDir('stpk-'))
  const port = node.logLines().find(l => l.msg === 'listener started' && l.protocol === 'http:management')?.port
  const status = await fetch(`http://127.0.0.1:${String(port)}/status`)
  expect(status.status).toBe(200)
  expect(await status.text()).toMatch(/^Node \S+ is started\nstarling is running$/)
  await stopNode(node)
  expect(loaded()).not.toContain('express')
  const again = await hookedNode(tempDir('stpk-'))
  expect((await api(again.node, 'GET', '/brokers')).code).toBe(0)
  await stopNode(again.node)
  expect(again.loaded()).toContain('express')
}, 30_000)

it('a node joins a fresh idle node at the first try; both load libp2p, and both list the two running', async () => {
  const a = await hookedNode(tempDir('stpk-'), { STARLING_NODE__NAME: 'idle-a@127.0.0.1' })
  const b = await hookedNode(tempDir('stpk-'), { STARLING_NODE__NAME: 'idle-b@127.0.0.1' })
  const clusterPort = (n: NodeProcess): number => Number(String(n.logLines().find(l => l.msg === 'cluster mesh listening')?.addr).split(':')[1])
  // alone, the idle node reports itself running
  const alone = await runCtlOn(a.node, ['cluster', 'status'])
  expect(alone.out).toContain("running_nodes => ['idle-a@127.0.0.1']")
  expect(await api(a.node, 'GET', '/cluster/')).toMatchObject({ code: 0, data: [{ node: 'idle-a@127.0.0.1', status: 'running', link: 'self' }] })

  const join = await runCtlOn(b.node, ['cluster', 'join', `idle-a@127.0.0.1:${clusterPort(a.node)}`])
  expect(join).toMatchObject({ code: 0, err: '' })
  expect(join.out).toContain('Join the cluster successfully.')
  expect(join.out).toContain("running_nodes => ['idle-b@127.0.0.1','idle-a@127.0.0.1']")
  expect((await runCtlOn(a.node, ['cluster', 'status'])).out).toContain("running_nodes => ['idle-a@127.0.0.1','idle-b@127.0.0.1']")
  await stopNode(b.node)
  await stopNode(a.node)
  for (const n of [a, b]) expect(n.loaded()).toEqual(expect.arrayContaining(['libp2p', '@libp2p/gossipsub', 'dist/cluster/mesh-host.js']))
}, 60_000)

it('a node with svc_auth_redis loaded at start loads ioredis', async () => {
  // Redis need not run: the plugin loads and reconnects in the background
  const loaded = await packagesOf('{svc_auth_redis, true}.\n')
  expect(loaded).toContain('ioredis')
}, 30_000)

it('a schema and a rule created through the API work; restarted, the node runs them from the start', async () => {
  const dataDir = tempDir('stpk-')
  const first = await hookedNode(dataDir)
  expect(await api(first.node, 'POST', '/schemas', { name: 'sensor', parser_type: 'avro', schema: SENSOR_AVSC })).toMatchObject({ code: 0 })
  const rule = await api(first.node, 'POST', '/rules', {
    rawsql: "SELECT schema_decode('sensor', payload) as d FROM \"in/#\" WHERE d.temp > 30",
    actions: [{ name: 'republish', params: { target_topic: 'out/1', payload_tmpl: '${d.id}' } }]
  })
  expect(rule).toMatchObject({ code: 0 })
  expect(await publishReading(first.node)).toBe('roof')
  await stopNode(first.node)
  const used = first.loaded()
  expect(used).toEqual(expect.arrayContaining(['ajv', 'avsc']))
  expect(used).toContain('dist/rules/sql/compile.js')

  // restarted: the stored schema compiles and the stored rule runs before any API request
  const again = await hookedNode(dataDir)
  expect(await publishReading(again.node)).toBe('roof')
  await stopNode(again.node)
  const atStart = again.loaded()
  expect(atStart).toContain('avsc')
  expect(atStart).toContain('dist/rules/sql/compile.js')
  expect(atStart).not.toContain('ajv')
}, 60_000)
