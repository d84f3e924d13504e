import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { silentLogger } from '../../../node/logger.js'
import { createControlServer, type ControlServer } from '../../../node/control/server.js'
import { callControl } from '../../../node/control/client.js'
import { ControlError, ControlSocketInUseError, NodeNotRunningError } from '../../../node/control/errors.js'

describe('control server and client over a Unix socket', () => {
  let dir: string
  let socketPath: string
  const servers: ControlServer[] = []

  function server (handlers = {}): ControlServer {
    const s = createControlServer({ socketPath, logger: silentLogger(), handlers })
    servers.push(s)
    return s
  }

  const call = (command: string, args: string[] = [], options = {}): Promise<unknown> =>
    callControl(socketPath, command, args, options, { nodeName: 'starling@127.0.0.1', timeoutMs: 5000 })

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'stctl-'))
    socketPath = path.join(dir, 'data', 'starling-ctl.sock')
  })

  afterEach(async () => {
    for (const s of servers.splice(0)) await s.stop()
    await rm(dir, { recursive: true, force: true })
  })

  it('runs a command and returns its result, passing args and options to the handler', async () => {
    await server({
      status: () => ({ node: 'starling@127.0.0.1', status: 'started', version: '0.1.0', uptime: 3 }),
      'plugins load': async ({ args, options }: { args: string[], options: object }) => ({ args, options })
    }).start()
    expect(await call('status')).toEqual({ node: 'starling@127.0.0.1', status: 'started', version: '0.1.0', uptime: 3 })
    expect(await call('plugins load', ['svc_web_hook'], { force: true, d: 'x' }))
      .toEqual({ args: ['svc_web_hook'], options: { force: true, d: 'x' } })
  })

  it('listens with mode 0600 in a data dir it creates', async () => {
    await server({}).start()
    expect((await stat(socketPath)).mode & 0o777).toBe(0o600)
  })

  it('returns a failing handler\'s message and numeric code', async () => {
    await server({
      'clients kick': () => { throw Object.assign(new Error('client not online'), { code: 112 }) },
      broken: () => { throw Object.assign(new Error('disk full'), { code: 'ENOSPC' }) }
    }).start()
    await expect(call('clients kick', ['c1'])).rejects.toMatchObject({ message: 'client not online', code: 112 })
    const err = await call('broken').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ControlError)
    expect((err as ControlError).message).toBe('disk full')
    expect((err as ControlError).code).toBeUndefined()
  })

  it('answers an unknown command with the list of known commands', async () => {
    await server({ status: () => 'ok', listeners: () => [] }).start()
    await expect(call('nope')).rejects.toThrow("Unknown command 'nope'; known commands: listeners, status")
  })

  it('serves commands registered after start and refuses a duplicate name', async () => {
    const s = server({ status: () => 'ok' })
    await s.start()
    s.register('cluster  join', ({ args }) => `joined ${args[0]}`)
    expect(() => s.register('status', () => 'again')).toThrow("Control command 'status' is already registered")
    expect(await call('cluster join', ['starling@10.0.0.2'])).toBe('joined starling@10.0.0.2')
    expect(s.commands()).toEqual(['cluster join', 'status'])
    expect(s.unregister('cluster join')).toBe(true)
    await expect(call('cluster join')).rejects.toThrow(/Unknown command/)
  })

  it('answers a malformed line with an error and keeps serving the connection', async () => {
    await server({ status: () => 'ok' }).start()
    const socket = net.createConnection(socketPath)
    const lines: string[] = []
    let buffered = ''
    socket.on('data', (chunk) => {
      buffered += chunk.toString()
      const parts = buffered.split('\n')
      buffered = parts.pop() ?? ''
      lines.push(...parts)
    })
    await new Promise((resolve) => socket.once('connect', resolve))
    socket.write('this is not json\n')
    socket.write('{"command":"status"}\n')
    socket.write('{"id":7,"command":"status","args":[1]}\n')
    socket.write('{"id":8,"command":"status","args":[],"options":{}}\n')
    await waitFor(() => lines.length >= 4)
    socket.destroy()
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      { id: null, ok: false, error: { message: 'Bad request: request is not valid JSON' } },
      { id: null, ok: false, error: { message: 'Bad request: request needs a numeric "id"' } },
      { id: 7, ok: false, error: { message: 'Bad request: "args" must be an array of strings' } },
      { id: 8, ok: true, result: 'ok' }
    ])
    expect(await call('status')).toBe('ok')
  })

  it('replaces a socket file left by a node that was killed', async () => {
    await leaveStaleSocket(socketPath)
    expect(existsSync(socketPath)).toBe(true)
    await expect(call('status')).rejects.toBeInstanceOf(NodeNotRunningError)
    await server({ status: () => 'fresh' }).start()
    expect(await call('status')).toBe('fresh')
  })

  it('refuses to start on a socket another node is serving, and leaves that node alone', async () => {
    await server({ status: () => 'first' }).start()
    const second = server({ status: () => 'second' })
    const err = await second.start().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ControlSocketInUseError)
    expect((err as Error).message).toBe(`Another node is already listening on the control socket ${socketPath}; ` +
      'stop it first, or give this node its own node.data_dir')
    await second.stop()
    expect(await call('status')).toBe('first')
  })

  it('refuses to replace a file that is not a socket', async () => {
    const s = server({})
    await s.start()
    await s.stop()
    await writeFile(socketPath, 'keep me')
    await expect(server({}).start()).rejects.toThrow(`${socketPath} exists and is not a socket`)
  })

  it('removes the socket file on stop; the client then says the node is not running', async () => {
    const s = server({ status: () => 'ok' })
    await s.start()
    await s.stop()
    expect(existsSync(socketPath)).toBe(false)
    await expect(call('status')).rejects.toThrow(
      `Node starling@127.0.0.1 is not running (no control socket at ${socketPath}); start it with bin/starling`)
  })

  it('times out when the node does not answer', async () => {
    await server({ slow: () => new Promise((resolve) => setTimeout(resolve, 2000).unref()) }).start()
    await expect(callControl(socketPath, 'slow', [], {}, { nodeName: 'n@h', timeoutMs: 100 }))
      .rejects.toThrow(`Node n@h did not answer 'slow' within 100 ms (control socket ${socketPath})`)
  })

  it('stops waiting when the caller aborts', async () => {
    await server({ slow: () => new Promise((resolve) => setTimeout(resolve, 2000).unref()) }).start()
    const controller = new AbortController()
    const pending = callControl(socketPath, 'slow', [], {}, { nodeName: 'n@h', signal: controller.signal })
    controller.abort(new Error('user gave up'))
    await expect(pending).rejects.toThrow('user gave up')
  })

  it('answers every request of a client that half-closed after writing them, then ends the connection', async () => {
    // found by the control socket door of the fuzzer (bench/fuzz/ctl-door.ts): the socket
    // closed at the client's FIN and the answers of commands still running were lost
    await server({
      slow: async () => { await new Promise((resolve) => setTimeout(resolve, 100)); return 'late' },
      status: () => 'now'
    }).start()
    const socket = net.connect(socketPath)
    let text = ''
    socket.setEncoding('utf8').on('data', (chunk: string) => { text += chunk })
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    socket.once('connect', () => {
      socket.end('{"id":1,"command":"slow"}\n{"id":2,"command":"status"}\n{"id":3,"command":"no such"}\n')
    })
    await closed
    const answers = text.trim().split('\n').map(line => JSON.parse(line)).sort((a, b) => a.id - b.id)
    expect(answers).toEqual([
      { id: 1, ok: true, result: 'late' },
      { id: 2, ok: true, result: 'now' },
      { id: 3, ok: false, error: { message: expect.stringMatching(/^Unknown command 'no such'/) } }
    ])
  })
})

/** Starts a listener in a child process and SIGKILLs it, so its socket file stays behind. */
async function leaveStaleSocket (socketPath: string): Promise<void> {
  const script = `require('fs').mkdirSync(${JSON.stringify(path.dirname(socketPath))}, { recursive: true });` +
    `require('net').createServer().listen(${JSON.stringify(socketPath)}, () => console.log('ready'))`
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  await new Promise((resolve, reject) => {
    child.stdout.once('data', resolve)
    child.once('exit', reject)
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

async function waitFor (predicate: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
