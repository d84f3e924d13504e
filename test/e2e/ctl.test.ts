/**
 * `starling-ctl` against a running `bin/starling` process, both as child processes that find
 * each other through the same `STARLING_*` environment (the node's data directory holds
 * the control socket). Needs `dist/` (`npm run build`).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  PROJECT_ROOT, spawnNode, killAllNodes, connectTo, closeProcessClients, runCtl, tempDir, within,
  EPHEMERAL_ENV, type NodeProcess
} from '../helpers/process.js'

/** The version the node reports: package.json's, in the spec's `v<major>.<minor>.<patch>` form. */
const VERSION = 'v' + (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')).version as string)
let node: NodeProcess

beforeAll(async () => { node = await spawnNode() })
afterEach(async () => { await closeProcessClients() })
afterAll(async () => { await killAllNodes() })

/** The `listener on mqtt:tcp:...` block of `starling-ctl listeners` output. */
function listenerBlock (text: string, protocol: string): string {
  const blocks = text.split(/^(?=listener on )/m)
  const block = blocks.find(b => b.startsWith(`listener on ${protocol}:`))
  if (block === undefined) throw new Error(`no ${protocol} listener in:\n${text}`)
  return block
}

/** The current_conn field of a listener block. */
function currentConn (block: string): number {
  const m = /^\s+current_conn\s*:\s*(\d+)\s*$/m.exec(block)
  if (m === null) throw new Error(`no current_conn in:\n${block}`)
  return Number(m[1])
}

describe('starling-ctl status', () => {
  it("prints Node '<name>' is started and starling <version> is running", async () => {
    const run = await runCtl(['status'], node.env)
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toBe(`Node 'starling@127.0.0.1' is started\nstarling ${VERSION.slice(1)} is running\n`)
  })

  it('prints the status as JSON with --json', async () => {
    const run = await runCtl(['status', '--json'], node.env)
    expect(run.code).toBe(0)
    const status = JSON.parse(run.stdout)
    expect(status).toMatchObject({ node: 'starling@127.0.0.1', status: 'started', version: VERSION })
    expect(typeof status.uptime).toBe('number')
  })
})

describe('starling-ctl listeners', () => {
  it('lists every MQTT listener with the port it is bound to', async () => {
    const run = await runCtl(['listeners'], node.env)
    expect(run.code).toBe(0)
    for (const protocol of ['mqtt:tcp', 'mqtt:ssl', 'mqtt:ws', 'mqtt:wss'] as const) {
      const block = listenerBlock(run.stdout, protocol)
      expect(block.split('\n')[0]).toBe(`listener on ${protocol}:127.0.0.1:${node.port(protocol)}`)
      expect(block).toMatch(/^\s+acceptors\s*: \d+$/m)
      expect(block).toMatch(/^\s+max_conns\s*: \d+$/m)
      expect(block).toMatch(/^\s+shutdown_count\s*: \[.*\]$/m)
    }
  })

  it('counts a connected client in current_conn of mqtt:tcp', async () => {
    const before = currentConn(listenerBlock((await runCtl(['listeners'], node.env)).stdout, 'mqtt:tcp'))
    const client = await connectTo(node.port('mqtt:tcp'), { protocolVersion: 4 })
    const during = currentConn(listenerBlock((await runCtl(['listeners'], node.env)).stdout, 'mqtt:tcp'))
    expect(during).toBe(before + 1)
    await client.endAsync()
    // the node notices the close asynchronously: ask again until the count is back (or 10 s)
    let after = during
    for (const deadline = Date.now() + 10000; after !== before && Date.now() < deadline;) {
      after = currentConn(listenerBlock((await runCtl(['listeners'], node.env)).stdout, 'mqtt:tcp'))
    }
    expect(after).toBe(before)
  })

  it('prints the listeners as JSON with --json', async () => {
    const client = await connectTo(node.port('mqtt:tcp'), { protocolVersion: 5 })
    const run = await runCtl(['listeners', '--json'], node.env)
    expect(run.code).toBe(0)
    const listeners = JSON.parse(run.stdout)
    expect(Array.isArray(listeners)).toBe(true)
    const tcp = listeners.find((l: any) => l.protocol === 'mqtt:tcp')
    expect(tcp).toMatchObject({ listen_on: `127.0.0.1:${node.port('mqtt:tcp')}` })
    expect(tcp.current_conns).toBeGreaterThanOrEqual(1)
    expect(client.connected).toBe(true)
  })
})

describe('a usage mistake', () => {
  it.each([
    [['clients', 'show', 'nobody'], /not online/],
    [['log', 'set-level', 'verbose'], /unknown log level verbose/]
  ])('%j is answered with the reason and logged by the node as one line without a stack', async (args, reason) => {
    const before = node.logLines().length
    const run = await runCtl(args, node.env)
    expect(run.code).toBe(1)
    expect(run.stdout + run.stderr).toMatch(reason)
    await within(new Promise<void>(resolve => {
      const check = (): void => {
        if (node.logLines().length > before) resolve()
        else setTimeout(check, 20)
      }
      check()
    }), 5000, 'the node logs the refusal')
    const logged = node.logLines().slice(before)
    expect(logged).toHaveLength(1)
    expect(logged[0]).toMatchObject({ msg: 'control command refused', command: args.slice(0, 2).join(' ') })
    expect(logged[0].reason).toMatch(reason)
    expect(JSON.stringify(logged[0])).not.toContain('stack')
  })

  it('a changed log level is logged without a second "level" field', async () => {
    const run = await runCtl(['log', 'set-level', 'warning'], node.env)
    expect(run.code).toBe(0)
    await runCtl(['log', 'set-level', 'info'], node.env)
    const raw = node.stdout().split('\n').filter(l => l.includes('log level changed'))
    expect(raw.length).toBeGreaterThan(0)
    for (const line of raw) expect(line.match(/"level":/g)).toHaveLength(1)
  })
})

describe('without a running node', () => {
  it.each([['status'], ['listeners']])('%s exits with code 1 and says the node is not running', async (command) => {
    const env = { ...EPHEMERAL_ENV, STARLING_NODE__DATA_DIR: tempDir() }
    const run = await runCtl([command], env)
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr).toMatch(/not running/)
  })

  it('says the node is not running after it was killed and left its control socket behind', async () => {
    const killed = await spawnNode()
    expect((await runCtl(['status'], killed.env)).code).toBe(0)
    killed.kill('SIGKILL')
    await within(killed.exited, 10000, 'exit after SIGKILL')
    const run = await runCtl(['status'], killed.env)
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/not running/)
  })
})
