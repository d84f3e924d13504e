/**
 * The Dockerfile and docker-compose.yml without an image (none can be pulled here): the
 * HEALTHCHECK command, run as the image would run it, against a running node and a stopped
 * one; the ports the image exposes and the compose file publishes, against the listeners the
 * configuration opens; and the build stage copying every folder the build compiles.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../../node/config/index.js'
import { API_AUTH, waitFor } from '../helpers/node.js'
import { PROJECT_ROOT, childEnv, killAllNodes, spawnNode, stopNode, type NodeProcess } from '../helpers/process.js'

const dockerfile = readFileSync(join(PROJECT_ROOT, 'Dockerfile'), 'utf8')
const compose = readFileSync(join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8')

/** Each listener's configuration key and the protocol the listeners API reports it as. */
const LISTENERS: ReadonlyArray<[key: string, protocol: string]> = [
  ['listener.tcp.external', 'mqtt:tcp'],
  ['listener.ssl.external', 'mqtt:ssl'],
  ['listener.ws.external', 'mqtt:ws'],
  ['listener.wss.external', 'mqtt:wss'],
  ['management.listener.http', 'http:management'],
  ['dashboard.listener.http', 'http:dashboard'],
  ['cluster.listen', 'cluster']
]

/** The HEALTHCHECK's exec-form command. */
function healthCheckCommand (): string[] {
  const m = /^HEALTHCHECK[^\n]*\\\n\s*CMD (\[.*\])$/m.exec(dockerfile)
  if (m === null) throw new Error('no HEALTHCHECK ... CMD [...] in the Dockerfile')
  return JSON.parse(m[1])
}

/** Runs `argv` from the project root (the image's WORKDIR holds the same bin/) with `env`. */
async function run (argv: string[], env: Record<string, string>): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const child = spawn(argv[0] === 'node' ? process.execPath : argv[0], argv.slice(1), { cwd: PROJECT_ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c })
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c })
  const code = await new Promise<number | null>(resolve => child.once('close', resolve))
  return { code, stdout, stderr }
}

/** The configuration a compose service's environment gives (`${VAR:-default}` with VAR unset). */
function composeConfig (): Record<string, any> {
  const env: Record<string, string> = {}
  for (const m of compose.matchAll(/^\s+(STARLING_[A-Z0-9_]+):\s*(.+)$/gm)) env[m[1]] = m[2].replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, '$1').trim()
  return loadConfig({ env, cwd: PROJECT_ROOT }) as Record<string, any>
}

/** The container ports a compose service publishes (`"host:container"`), checking host = container. */
function publishedPorts (service: string): number[] {
  const block = new RegExp(`^  ${service}:\\n((?:    .*\\n|\\s*\\n)*)`, 'm').exec(compose)?.[1] ?? ''
  const ports = /^ {4}ports:\n((?: {6}- .*\n)*)/m.exec(block)?.[1] ?? ''
  return [...ports.matchAll(/- "(\d+):(\d+)"/g)].map(([, host, container]) => {
    expect(host).toBe(container)
    return Number(container)
  })
}

describe('the image\'s health check', () => {
  let node: NodeProcess
  beforeAll(async () => { node = await spawnNode() })
  afterAll(killAllNodes)

  it('is GET /status, run as the image runs it: healthy while the node runs, unhealthy once it stopped', async () => {
    const command = healthCheckCommand()
    expect(command).toEqual(['node', 'bin/starling-status'])
    await waitFor(() => node.stdout().includes('is running now!'), 'the node to start', 20000)
    const env = { STARLING_MANAGEMENT__LISTENER__HTTP: `127.0.0.1:${node.port('http:management' as any)}` }
    const healthy = await run(command, env)
    expect(healthy).toMatchObject({ code: 0, stderr: '' })
    expect(healthy.stdout).toMatch(/^Node starling@127\.0\.0\.1 is started\nstarling is running\n$/)
    expect((await stopNode(node)).code).toBe(0)
    const unhealthy = await run(command, env)
    expect(unhealthy.code).toBe(1)
    expect(unhealthy.stderr).toMatch(/ECONNREFUSED/)
    // the management listener turned off: unhealthy, saying why
    expect(await run(command, { STARLING_MANAGEMENT__LISTENER__HTTP: 'off' })).toMatchObject({ code: 1, stderr: expect.stringMatching(/management.listener.http is off/) })
  })
})

describe('the ports of the image and of the compose file', () => {
  afterAll(killAllNodes)

  it('are those of the listeners a node opens: the image exposes each, starling1 publishes each but the cluster port', async () => {
    // every listener of LISTENERS is one a node opens and reports
    const node = await spawnNode()
    await waitFor(() => node.stdout().includes('is running now!'), 'the node to start', 20000)
    const res = await fetch(`http://127.0.0.1:${node.port('http:management' as any)}/api/v3/listeners/`, { headers: { authorization: API_AUTH } })
    const reported = ((await res.json()) as any).data[0].listeners.map((l: { protocol: string }) => l.protocol)
    expect(node.stdout()).toMatch(/Start cluster listener on /)
    expect(new Set([...reported, 'cluster'])).toEqual(new Set(LISTENERS.map(([, protocol]) => protocol)))
    await stopNode(node)

    // their ports as the compose nodes configure them
    const config = composeConfig()
    expect(config['management.listener.https']).toBeNull()
    expect(config['dashboard.listener.https']).toBeNull()
    const ports = new Map(LISTENERS.map(([key]) => [key, config[key].port as number]))
    const exposed = /^EXPOSE (.+)$/m.exec(dockerfile)![1].trim().split(/\s+/).map(Number)
    expect(new Set(exposed)).toEqual(new Set(ports.values()))
    const clusterPort = ports.get('cluster.listen')!
    expect(new Set(publishedPorts('starling1'))).toEqual(new Set([...ports.values()].filter(p => p !== clusterPort)))
    expect(publishedPorts('starling2')).toEqual([])
  })
})

describe('the image\'s build stage', () => {
  it('copies every folder the build compiles (bench/ left out on purpose) and the dashboard app', () => {
    const build = JSON.parse(readFileSync(join(PROJECT_ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] }
    const copied = [...dockerfile.matchAll(/^COPY (\S+) \.\/(\S+)$/gm)].filter(([, from, to]) => from === to).map(([, from]) => from)
    expect(copied).toEqual(expect.arrayContaining([...build.include.filter(dir => dir !== 'bench'), 'dashboard']))
    expect(readFileSync(join(PROJECT_ROOT, '.dockerignore'), 'utf8')).toMatch(/^bench$/m)
  })
})
