import os from 'node:os'
import path from 'node:path'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { runCtl, type CtlIo } from '../../../node/control/ctl-program.js'
import { silentLogger } from '../../../node/logger.js'
import { createControlServer, type ControlHandlers, type ControlServer } from '../../../node/control/server.js'
import { CTL_COMMANDS, defineCommand } from '../../../node/control/commands.js'

const STATUS = { node: 'ctl@127.0.0.1', status: 'started', version: 'v0.1.0', uptime: 42 }
const LISTENERS = [
  { protocol: 'mqtt:tcp', listen_on: '0.0.0.0:1883', acceptors: 8, max_conns: 1024000, current_conns: 2, shutdown_count: [] },
  { protocol: 'mqtt:ws', listen_on: '8083', acceptors: 4, max_conns: 102400, current_conns: 0, shutdown_count: { kicked: 1 } }
]

describe('starling-ctl (runCtl)', () => {
  let cwd: string
  let server: ControlServer | undefined

  /** Runs the CLI in `cwd` (also the installation root) with only the given environment; returns exit code and output. */
  async function ctl (argv: string[], env: CtlIo['env'] = {}, commands = CTL_COMMANDS): Promise<{ code: number, out: string, err: string }> {
    let out = ''
    let err = ''
    const code = await runCtl(argv, {
      env,
      cwd,
      // the temporary directory plays the installation (its etc/starling.conf, its data/)
      root: cwd,
      stdout: { write: (s: string) => { out += s } },
      stderr: { write: (s: string) => { err += s } }
    }, commands)
    return { code, out, err }
  }

  /** Starts a control server where a node with `node.data_dir = <cwd>/<dataDir>` listens. */
  async function startNode (handlers: ControlHandlers, dataDir = 'data'): Promise<void> {
    server = createControlServer({ socketPath: path.join(cwd, dataDir, 'starling-ctl.sock'), logger: silentLogger(), handlers })
    await server.start()
  }

  beforeEach(async () => {
    cwd = await mkdtemp(path.join(os.tmpdir(), 'stctl-'))
    await mkdir(path.join(cwd, 'etc'))
    await writeFile(path.join(cwd, 'etc', 'starling.conf'), 'node.name = ctl@127.0.0.1\nnode.data_dir = data\n')
  })

  afterEach(async () => {
    await server?.stop()
    server = undefined
    await rm(cwd, { recursive: true, force: true })
  })

  it('prints status the way EMQ X did', async () => {
    await startNode({ status: () => STATUS })
    expect(await ctl(['status'])).toEqual({ code: 0, out: "Node 'ctl@127.0.0.1' is started\nstarling 0.1.0 is running\n", err: '' })
  })

  it('prints the status result as JSON with --json, before or after the command', async () => {
    await startNode({ status: () => STATUS })
    for (const argv of [['--json', 'status'], ['status', '--json']]) {
      const { code, out } = await ctl(argv)
      expect(code).toBe(0)
      expect(JSON.parse(out)).toEqual(STATUS)
    }
  })

  it('prints one block per listener, and the array with --json', async () => {
    await startNode({ listeners: () => LISTENERS })
    const text = await ctl(['listeners'])
    expect(text.code).toBe(0)
    expect(text.out).toBe([
      'listener on mqtt:tcp:0.0.0.0:1883',
      '  acceptors       : 8',
      '  max_conns       : 1024000',
      '  current_conn    : 2',
      '  shutdown_count  : []',
      'listener on mqtt:ws:8083',
      '  acceptors       : 4',
      '  max_conns       : 102400',
      '  current_conn    : 0',
      '  shutdown_count  : [{kicked,1}]',
      ''
    ].join('\n'))
    const json = await ctl(['listeners', '--json'])
    expect(JSON.parse(json.out)).toEqual(LISTENERS)
  })

  it('exits 1 with a message naming the node when it is not running', async () => {
    const socketPath = path.join(cwd, 'data', 'starling-ctl.sock')
    expect(await ctl(['status'])).toEqual({
      code: 1,
      out: '',
      err: `Node ctl@127.0.0.1 is not running (no control socket at ${socketPath}); start it with bin/starling\n`
    })
  })

  it('finds the node through --config, STARLING_CONFIG and STARLING_* overrides', async () => {
    await writeFile(path.join(cwd, 'other.conf'), 'node.name = other@127.0.0.1\nnode.data_dir = other-data\n')
    await startNode({ status: () => ({ ...STATUS, node: 'other@127.0.0.1' }) }, 'other-data')
    expect((await ctl(['--config', 'other.conf', 'status'])).out).toMatch(/^Node 'other@127.0.0.1' is started/)
    expect((await ctl(['status'], { STARLING_CONFIG: 'other.conf' })).out).toMatch(/^Node 'other@127.0.0.1' is started/)
    expect((await ctl(['status'], { STARLING_NODE__DATA_DIR: 'other-data' })).code).toBe(0)
    const missing = await ctl(['status'], { STARLING_NODE__DATA_DIR: 'nowhere' })
    expect(missing.err).toContain(`no control socket at ${path.join(cwd, 'nowhere', 'starling-ctl.sock')}`)
  })

  it('exits 1 with the configuration error when the config is bad', async () => {
    await writeFile(path.join(cwd, 'etc', 'starling.conf'), 'node.nmae = x@y\n')
    const { code, out, err } = await ctl(['status'])
    expect(code).toBe(1)
    expect(out).toBe('')
    expect(err).toMatch(/unknown key "node.nmae" \(did you mean node.name\?\)\n$/)
    expect(err.split('\n')).toHaveLength(2)
  })

  it('exits 1 with the node\'s message when the command fails there', async () => {
    await startNode({ status: () => { throw Object.assign(new Error('node is shutting down'), { code: 102 }) } })
    expect(await ctl(['status'])).toEqual({ code: 1, out: '', err: 'node is shutting down\n' })
  })

  it('lists the commands with --help and exits 0', async () => {
    const { code, out } = await ctl(['--help'])
    expect(code).toBe(0)
    expect(out).toMatch(/Usage: starling-ctl \[options\] \[command\]/)
    expect(out).toMatch(/--config <file>/)
    expect(out).toMatch(/--json/)
    expect(out).toMatch(/\n {2}status\s+Show whether the node is started/)
    expect(out).toMatch(/\n {2}listeners\s+Show the listeners/)
  })

  it('exits 1 with usage help on an unknown command', async () => {
    const { code, err } = await ctl(['nonsense'])
    expect(code).toBe(1)
    expect(err).toMatch(/unknown command 'nonsense'/)
  })

  it('sends multi-word commands from the table with their arguments and options', async () => {
    const pluginsLoad = defineCommand<{ loaded: string, options: object }>({
      words: ['plugins', 'load'],
      description: 'Load a plugin',
      args: [{ name: 'plugin', description: 'plugin name' }],
      options: [{ flags: '-f, --force', description: 'load even if loaded' }],
      render: (result) => `Plugin ${result.loaded} loaded successfully.\n`
    })
    await startNode({ 'plugins load': ({ args, options }) => ({ loaded: args[0], options }) })
    const commands = [...CTL_COMMANDS, pluginsLoad]
    expect(await ctl(['plugins', 'load', 'svc_web_hook'], {}, commands))
      .toEqual({ code: 0, out: 'Plugin svc_web_hook loaded successfully.\n', err: '' })
    const json = await ctl(['--json', 'plugins', 'load', 'svc_retainer', '--force'], {}, commands)
    expect(JSON.parse(json.out)).toEqual({ loaded: 'svc_retainer', options: { force: true } })
    const missingArg = await ctl(['plugins', 'load'], {}, commands)
    expect(missingArg.code).toBe(1)
    expect(missingArg.err).toMatch(/missing required argument 'plugin'/)
    const help = await ctl(['--help'], {}, commands)
    expect(help.out).toMatch(/plugins load <plugin>\s+Load a plugin/)
  })
})
