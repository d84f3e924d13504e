/**
 * The control socket checks a request's arguments against the command table before it runs
 * the command: a client other than `starling-ctl` (`nc -U`, a script, the fuzzer's `ctl`
 * door) that sends too few, too many or non-string arguments gets the usage error
 * `starling-ctl` gives, and nothing changes. Before, the node took the count on trust and
 * answered with its own failure ("rule undefined not found", "The "string" argument must
 * be of type string").
 */
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { mkdtemp, rm } from 'node:fs/promises'
import { silentLogger } from '../../../node/logger.js'
import { createControlServer, type ControlServer } from '../../../node/control/server.js'
import { callControl } from '../../../node/control/client.js'
import { defineCommand } from '../../../node/control/commands.js'
import { startTestNode, type TestNode } from '../../helpers/node.js'

/** Sends raw request lines on one connection and resolves with the parsed answers. */
async function send (socketPath: string, requests: unknown[]): Promise<any[]> {
  return await new Promise((resolve, reject) => {
    const socket = net.connect(socketPath)
    let buffered = ''
    const answers: any[] = []
    socket.setEncoding('utf8')
    socket.on('error', reject)
    socket.on('data', (chunk: string) => {
      buffered += chunk
      let nl: number
      while ((nl = buffered.indexOf('\n')) !== -1) {
        answers.push(JSON.parse(buffered.slice(0, nl)))
        buffered = buffered.slice(nl + 1)
      }
      if (answers.length === requests.length) { socket.end(); resolve(answers) }
    })
    socket.on('connect', () => socket.write(requests.map((r) => JSON.stringify(r) + '\n').join('')))
  })
}

const ok = (): string => 'ok\n'

describe('the control server checks arguments against the command table', () => {
  let dir: string
  let socketPath: string
  let server: ControlServer
  const calls: string[][] = []

  const table = [
    defineCommand({ words: ['things', 'add'], description: 'add', args: [{ name: 'Kind', description: 'k' }, { name: 'Name', description: 'n' }], render: ok }),
    defineCommand({ words: ['things', 'show'], description: 'show', args: [{ name: 'Name', description: 'n' }, { name: 'Level', description: 'l', optional: true }], render: ok }),
    defineCommand({ words: ['things', 'tag'], description: 'tag', args: [{ name: 'Name', description: 'n' }, { name: 'Tags', description: 't', variadic: true }], render: ok }),
    defineCommand({ words: ['things', 'list'], description: 'list', render: ok })
  ]

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'stctl-args-'))
    socketPath = path.join(dir, 'starling-ctl.sock')
    const record = ({ args }: { args: string[] }): string[] => { calls.push(args); return args }
    server = createControlServer({
      socketPath,
      logger: silentLogger(),
      table,
      handlers: { 'things add': record, 'things show': record, 'things tag': record, 'things list': record, 'off table': record }
    })
    await server.start()
  })

  afterAll(async () => {
    await server.stop()
    await rm(dir, { recursive: true, force: true })
  })

  beforeEach(() => { calls.length = 0 })

  const call = async (command: string, args: unknown[]): Promise<unknown> =>
    await callControl(socketPath, command, args as string[], {}, { nodeName: 'test', timeoutMs: 5000 })

  it('refuses a command missing a required argument with 107 and starling-ctl\'s wording, without running it', async () => {
    await expect(call('things add', ['client_id'])).rejects.toMatchObject({
      code: 107,
      message: "missing required argument 'Name' (usage: starling-ctl things add <Kind> <Name>)"
    })
    await expect(call('things show', [])).rejects.toMatchObject({ code: 107, message: expect.stringMatching(/^missing required argument 'Name'/) })
    await expect(call('things tag', ['a'])).rejects.toMatchObject({
      code: 107,
      message: "missing required argument 'Tags' (usage: starling-ctl things tag <Name> <Tags...>)"
    })
    expect(calls).toEqual([])
  })

  it('refuses more arguments than declared with 102, without running it', async () => {
    await expect(call('things add', ['a', 'b', 'c'])).rejects.toMatchObject({
      code: 102,
      message: "too many arguments for 'things add': expected 2 arguments but got 3 (usage: starling-ctl things add <Kind> <Name>)"
    })
    await expect(call('things show', ['a', 'b', 'c'])).rejects.toMatchObject({
      message: "too many arguments for 'things show': expected at most 2 arguments but got 3 (usage: starling-ctl things show <Name> [Level])"
    })
    await expect(call('things list', ['x'])).rejects.toMatchObject({ message: expect.stringMatching(/^too many arguments for 'things list': expected 0 arguments but got 1/) })
    expect(calls).toEqual([])
  })

  it('refuses arguments that are not strings, without running the command', async () => {
    const answers = await send(socketPath, [
      { id: 1, command: 'things add', args: ['a', 7] },
      { id: 2, command: 'things add', args: ['a', null] },
      { id: 3, command: 'things add', args: [['a'], 'b'] }
    ])
    for (const a of answers) expect(a).toMatchObject({ ok: false, error: { message: expect.stringMatching(/string/) } })
    expect(calls).toEqual([])
  })

  it('runs a command whose arguments fit: optional ones left out, variadic ones many', async () => {
    expect(await call('things add', ['a', 'b'])).toEqual(['a', 'b'])
    expect(await call('things show', ['a'])).toEqual(['a'])
    expect(await call('things show', ['a', 'debug'])).toEqual(['a', 'debug'])
    expect(await call('things tag', ['a', 'x', 'y', 'z'])).toEqual(['a', 'x', 'y', 'z'])
    expect(await call('things list', [])).toEqual([])
    // the command name is normalised before the lookup, as before the handler
    expect((await send(socketPath, [{ id: 9, command: '  things   add ', args: ['a'] }]))[0]).toMatchObject({ id: 9, ok: false, error: { code: 107 } })
    expect(calls).toEqual([['a', 'b'], ['a'], ['a', 'debug'], ['a', 'x', 'y', 'z'], []])
  })

  it('passes a command the table does not describe its arguments as sent', async () => {
    expect(await call('off table', ['1', '2', '3'])).toEqual(['1', '2', '3'])
  })
})

describe('a node checks the arguments of every starling-ctl command', () => {
  let node: TestNode
  let socketPath: string

  beforeAll(async () => {
    node = await startTestNode()
    socketPath = path.join(node.dataDir, 'starling-ctl.sock')
  }, 30_000)

  afterAll(async () => { await node.destroy() })

  const list = async (command: string): Promise<unknown> => (await send(socketPath, [{ id: 1, command, args: [], options: {} }]))[0].result

  it('answers a missing argument with the usage error, not the node\'s own failure, and changes nothing', async () => {
    const before = await Promise.all(['rules list', 'banned list', 'trace list', 'mgmt list'].map(list))
    const answers = await send(socketPath, [
      { id: 1, command: 'rules delete', args: [] },
      { id: 2, command: 'banned add', args: ['client_id'] },
      { id: 3, command: 'trace start client', args: ['c1'] },
      { id: 4, command: 'mgmt insert', args: ['app1'] },
      { id: 5, command: 'banned add', args: ['client_id', 'c1', 'extra'] },
      { id: 6, command: 'trace start topic', args: ['t/#', path.join(node.dataDir, 't.log'), 'debug', 'extra'] },
      { id: 7, command: 'banned del', args: ['client_id', 5] },
      { id: 8, command: 'status', args: ['now'] }
    ])
    expect(answers.map((a) => [a.id, a.ok, a.error?.code])).toEqual([
      [1, false, 107], [2, false, 107], [3, false, 107], [4, false, 107], [5, false, 102], [6, false, 102], [7, false, undefined], [8, false, 102]
    ])
    expect(answers[0].error.message).toBe("missing required argument 'RuleId' (usage: starling-ctl rules delete <RuleId>)")
    expect(answers[1].error.message).toBe("missing required argument 'Who' (usage: starling-ctl banned add <As> <Who>)")
    for (const a of answers) expect(a.error.message).not.toMatch(/undefined|must be of type/)
    expect(await Promise.all(['rules list', 'banned list', 'trace list', 'mgmt list'].map(list))).toEqual(before)
  })
})
