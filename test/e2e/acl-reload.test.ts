/**
 * The ACL cache and `starling-ctl acl reload` against a running node: a changed file takes
 * effect only on reload, and then also for a connected client whose decision was cached; a
 * bad file on reload changes nothing; a bad file at start stops the node naming the line.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestNode, connect, closeClients, collect, waitFor, type TestNode } from '../helpers/node.js'
import { pubackCode } from '../helpers/mqtt.js'
import { ACL_CTL_COMMANDS, AclFileError, type AclService } from '../../node/acl/index.js'
import { runCtlOn } from '../helpers/ctl.js'

let dir: string
let file: string
let node: TestNode
let acl: AclService

/** Runs `starling-ctl` with the ACL commands against the test node's control socket. */
async function ctl (...argv: string[]): Promise<{ code: number, out: string, err: string }> {
  return await runCtlOn(node, argv, { cwd: dir, commands: ACL_CTL_COMMANDS, env: { STARLING_NODE__NAME: node.name } })
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'starling-acl-'))
  file = join(dir, 'acl.conf')
  writeFileSync(file, '{allow, all}.\n')
  node = await startTestNode({ acl_file: file })
  acl = node.services.acl
})
afterEach(async () => {
  await closeClients()
  await acl.stop()
  await node.destroy()
  rmSync(dir, { recursive: true, force: true })
})

describe('acl reload', () => {
  it('applies a changed rule to a connected client whose decision was cached', async () => {
    const sub = await connect(node, { protocolVersion: 5 })
    const received = collect(sub)
    await sub.subscribeAsync('reload/#', { qos: 1 })
    const pub = await connect(node, { protocolVersion: 5, clientId: 'reload-pub' })
    expect(await pubackCode(pub, 'reload/t')).toBe(0)
    expect(acl.cache?.size('reload-pub')).toBe(1)

    writeFileSync(file, '{deny, all, publish, ["reload/t"]}.\n{allow, all}.\n')
    // not reloaded yet: the rules in force (and the cached decision) still allow
    expect(await pubackCode(pub, 'reload/t')).toBe(0)

    expect(await ctl('acl', 'reload')).toEqual({ code: 0, out: 'ok\nrules: 2\n', err: '' })
    expect(acl.cache?.size('reload-pub')).toBe(0)
    expect(await pubackCode(pub, 'reload/t')).toBe(0x87)
    expect(await pubackCode(pub, 'reload/other')).toBe(0)
    await waitFor(() => received.length === 3, 'the allowed messages')
    expect(received.map(m => m.topic)).toEqual(['reload/t', 'reload/t', 'reload/other'])
  })

  it('prints the rule count as JSON with --json', async () => {
    writeFileSync(file, '{allow, all, publish, ["a"]}.\n{deny, all, subscribe, ["b"]}.\n{allow, all}.\n')
    const run = await ctl('acl', 'reload', '--json')
    expect(run.code).toBe(0)
    expect(JSON.parse(run.out)).toEqual({ rules: 3 })
  })

  it('reports a malformed file with its line and keeps the rules in force', async () => {
    writeFileSync(file, '{deny, all, publish, ["#"]}.\n{alow, all}.\n')
    const run = await ctl('acl', 'reload')
    expect(run.code).toBe(1)
    expect(run.err).toContain(`${file}:2: expected allow or deny, got 'alow'`)
    const client = await connect(node, { protocolVersion: 5 })
    expect(await pubackCode(client, 'still/allowed')).toBe(0)
    expect(acl.rules).toHaveLength(1)
  })
})

describe('the ACL cache', () => {
  it("drops a client's entries when it disconnects", async () => {
    const client = await connect(node, { protocolVersion: 5, clientId: 'cache-drop' })
    expect(await pubackCode(client, 'cache/a')).toBe(0)
    await client.subscribeAsync('cache/b')
    expect(acl.cache?.size('cache-drop')).toBe(2)
    await client.endAsync()
    await waitFor(() => acl.cache?.size('cache-drop') === 0, 'the cache entries to be dropped')
  })

  it('is not used when enable_acl_cache is off', async () => {
    await acl.stop()
    await node.destroy()
    node = await startTestNode({ acl_file: file, enable_acl_cache: 'off' })
    acl = node.services.acl
    expect(acl.cache).toBeNull()
    const client = await connect(node, { protocolVersion: 5 })
    expect(await pubackCode(client, 'nocache/a')).toBe(0)
  })
})

describe('start and stop', () => {
  it('refuses to start on a malformed file, naming the file and line', async () => {
    const bad = join(dir, 'bad.conf')
    writeFileSync(bad, '%% ok\n{allow, all, publish, ["a"]}.\n{allow, {user, "u"}, pubsub}.\n')
    const starting = startTestNode({ acl_file: bad })
    await expect(starting).rejects.toThrow(AclFileError)
    await expect(starting).rejects.toThrow(`${bad}:3: expected a rule of 4 elements`)
  })

  it('refuses to start when the file is missing, naming it', async () => {
    await expect(startTestNode({ acl_file: join(dir, 'missing.conf') })).rejects.toThrow(/missing\.conf: cannot read the ACL file \(acl_file\)/)
  })

  it('stop removes the ACL from the broker and the acl reload command', async () => {
    expect(node.broker.accessControl).toBe(acl.acl)
    expect(node.control.commands()).toContain('acl reload')
    await acl.stop()
    expect(node.broker.accessControl).toBeNull()
    expect(node.control.commands()).not.toContain('acl reload')
  })
})
