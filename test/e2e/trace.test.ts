/**
 * `starling-ctl trace ...` and `starling-ctl log ...` against a node's control socket:
 * client and topic traces written to files, and the log level changed at run time.
 */
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { EPHEMERAL, connect, closeClients, waitFor, nextMessage } from '../helpers/node.js'
import { loadConfig } from '../../node/config/index.js'
import type { Logger } from '../../node/logger.js'
import { startNode, type StarlingNode } from '../../node/node.js'
import { runCtl } from '../../node/control/index.js'
import { ALL_CTL_COMMANDS } from '../../bin/assemble.js'

let node: StarlingNode
let dir: string
let dataDir: string
/** Lines the node's root logger wrote. */
const logLines: string[] = []
/** The node's root logger: the one the log commands change. */
let root: Logger
/** A component's logger, made before any level change. */
let component: Logger

// The node's own trace and log services serve these commands (startNode starts them and
// wires the trace packet tap). The node is started here rather than with startTestNode
// because the log tests read what its logger writes: it logs into `logLines` at `warn`,
// the level of the default `log.level` (warning).
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'starling-trace-'))
  dataDir = join(dir, 'data')
  root = pino({ level: 'warn' }, new Writable({ write (chunk, _enc, cb) { logLines.push(chunk.toString()); cb() } }))
  component = root.child({ component: 'test' })
  const config = loadConfig({ env: {}, overrides: { ...EPHEMERAL, 'node.data_dir': dataDir, 'broker.sys_interval': '0', 'broker.sys_heartbeat': '0' } })
  node = await startNode(config, { logger: root, env: {} })
})
afterAll(async () => {
  await node.stop()
  rmSync(dir, { recursive: true, force: true })
})
afterEach(async () => { await closeClients() })

/** Runs starling-ctl (every command it ships with) against the test node; resolves with its exit code and output. */
async function ctl (...argv: string[]): Promise<{ code: number, stdout: string, stderr: string }> {
  let stdout = ''
  let stderr = ''
  const code = await runCtl(argv, {
    env: { STARLING_NODE__DATA_DIR: dataDir },
    cwd: dir,
    stdout: { write: (t: string) => { stdout += t } },
    stderr: { write: (t: string) => { stderr += t } }
  }, ALL_CTL_COMMANDS)
  return { code, stdout, stderr }
}

const LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[(debug|info)\] /

describe('starling-ctl trace', () => {
  it('traces a client and a topic filter to files until stopped', async () => {
    const clientFile = join(dir, 'tr-client.log')
    const topicFile = join(dir, 'tr-topic.log')
    expect(await ctl('trace', 'start', 'client', 'tr-c1', clientFile)).toEqual({ code: 0, stdout: 'trace client_id tr-c1 successfully\n', stderr: '' })
    expect(await ctl('trace', 'start', 'topic', 'tr/+', topicFile, 'debug')).toEqual({ code: 0, stdout: 'trace topic tr/+ successfully\n', stderr: '' })
    const listed = await ctl('trace', 'list')
    expect(listed.stdout).toBe(`Trace(client_id=tr-c1, level=debug, destination=${JSON.stringify(clientFile)})\n` +
      `Trace(topic=tr/+, level=debug, destination=${JSON.stringify(topicFile)})\n`)

    const c1 = await connect(node, { clientId: 'tr-c1', username: 'alice', protocolVersion: 4 })
    await c1.subscribeAsync('tr/x', { qos: 1 })
    const own = nextMessage(c1)
    await c1.publishAsync('tr/x', 'hello', { qos: 1 })
    await own
    const other = await connect(node, { clientId: 'tr-other' })
    await other.publishAsync('tr/y', 'world')
    await other.publishAsync('elsewhere', 'unseen')
    await c1.unsubscribeAsync('tr/x')
    await c1.endAsync()
    await waitFor(() => existsSync(clientFile) && readFileSync(clientFile, 'utf8').includes('DISCONNECTED'), 'the disconnect line')

    expect(await ctl('trace', 'stop', 'client', 'tr-c1')).toEqual({ code: 0, stdout: 'stop tracing client_id tr-c1 successfully\n', stderr: '' })
    expect((await ctl('trace', 'stop', 'topic', 'tr/+')).code).toBe(0)
    expect((await ctl('trace', 'list')).stdout).toBe('')

    const lines = readFileSync(clientFile, 'utf8').trimEnd().split('\n')
    for (const line of lines) expect(line).toMatch(LINE)
    const texts = lines.map(l => l.replace(LINE, ''))
    const at = /^tr-c1@127\.0\.0\.1:\d+ /
    for (const t of texts) expect(t).toMatch(at)
    const events = texts.map(t => t.replace(at, '')).filter(t => !t.startsWith('RECV ') && !t.startsWith('SEND '))
    expect(events).toEqual([
      'CONNECTED(ClientId=tr-c1, Username=alice, ProtoName=MQTT, ProtoVer=4, CleanStart=true, KeepAlive=60, ConnAck=0)',
      'SUBSCRIBE(TopicFilters=[tr/x(Q1)])',
      'PUBLISH(Q1, R0, D0, Topic=tr/x, Payload=hello)',
      'DELIVER(Q1, R0, D0, Topic=tr/x, From=tr-c1, Payload=hello)',
      'ACKED(Q1, Topic=tr/x, Payload=hello)',
      'UNSUBSCRIBE(TopicFilters=[tr/x])',
      'DISCONNECTED(Reason=normal)'
    ])
    // packet lines, from the node's packet tap
    expect(texts.some(t => /RECV PUBLISH\(Q1, R0, D0, Topic=tr\/x, PacketId=\d+, Payload=hello\)$/.test(t))).toBe(true)
    expect(texts.some(t => /SEND PUBACK\(PacketId=\d+, ReasonCode=0\)$/.test(t))).toBe(true)

    const topicLines = readFileSync(topicFile, 'utf8').trimEnd().split('\n')
    expect(topicLines.map(l => l.replace(LINE, '').replace(/@127\.0\.0\.1:\d+/, ''))).toEqual([
      'tr-c1 PUBLISH(Q1, R0, D0, Topic=tr/x, Payload=hello)',
      'tr-other PUBLISH(Q0, R0, D0, Topic=tr/y, Payload=world)'
    ])
  })

  it('appends to an existing file and refuses a second trace of the same client', async () => {
    const file = join(dir, 'tr-twice.log')
    expect((await ctl('trace', 'start', 'client', 'tr-twice', file)).code).toBe(0)
    const again = await ctl('trace', 'start', 'client', 'tr-twice', join(dir, 'other.log'))
    expect(again.code).toBe(1)
    expect(again.stderr).toBe(`trace client_id tr-twice is already running (to ${file}); stop it first\n`)
    await connect(node, { clientId: 'tr-twice' })
    await closeClients()
    await waitFor(() => readFileSync(file, 'utf8').includes('DISCONNECTED'), 'first session')
    expect((await ctl('trace', 'stop', 'client', 'tr-twice')).code).toBe(0)
    expect((await ctl('trace', 'start', 'client', 'tr-twice', file, 'info')).code).toBe(0)
    await connect(node, { clientId: 'tr-twice' })
    await closeClients()
    const connectedLines = (): string[] => readFileSync(file, 'utf8').split('\n').filter(l => l.includes(' CONNECTED('))
    await waitFor(() => connectedLines().length === 2, 'the second session')
    expect((await ctl('trace', 'stop', 'client', 'tr-twice')).code).toBe(0)
    // the second trace, at info, has the connection events but no message lines
    expect(connectedLines()[1]).toMatch(/ \[info\] tr-twice@127\.0\.0\.1:\d+ CONNECTED\(/)
  })

  it('refuses to stop a trace that is not running, a bad level and a bad filter', async () => {
    expect(await ctl('trace', 'stop', 'client', 'tr-none')).toEqual({ code: 1, stdout: '', stderr: 'no trace of client_id tr-none is running\n' })
    expect((await ctl('trace', 'start', 'client', 'tr-bad', join(dir, 'bad.log'), 'loud')).stderr).toMatch(/^unknown level loud: use one of debug, info/)
    expect((await ctl('trace', 'start', 'topic', 'a/#/b', join(dir, 'bad.log'))).stderr).toMatch(/^bad topic filter a\/#\/b/)
    expect((await ctl('trace', 'start', 'client', 'tr-bad', join(dir, 'no/such/dir/x.log'))).stderr).toMatch(/^cannot open trace file /)
    expect((await ctl('trace', 'list')).stdout).toBe('')
  })
})

describe('starling-ctl log', () => {
  it('shows the primary level, and changes the level of the running node', async () => {
    expect(await ctl('log', 'primary-level')).toEqual({ code: 0, stdout: 'warning\n', stderr: '' })
    expect(await ctl('log', 'primary-level', 'debug')).toEqual({ code: 0, stdout: 'debug\n', stderr: '' })
    expect(root.level).toBe('debug')
    expect((await ctl('log', 'primary-level')).stdout).toBe('debug\n')
    expect((await ctl('log', 'set-level', 'error')).stdout).toBe('error\n')
    expect((await ctl('log', 'set-level', 'notice')).stdout).toBe('notice\n')
    expect(root.level).toBe('info') // notice is written at pino's info
    expect((await ctl('log', 'set-level', 'verbose')).code).toBe(1)
    expect((await ctl('log', 'primary-level')).stdout).toBe('notice\n')
    expect(root.level).toBe('info')
  })

  it('makes components log at the new level, their loggers included', async () => {
    expect((await ctl('log', 'set-level', 'error')).code).toBe(0)
    component.warn('not written at error')
    expect((await ctl('log', 'primary-level', 'debug')).code).toBe(0)
    component.debug('written at debug')
    const texts = logLines.map(l => JSON.parse(l).msg)
    expect(texts).toContain('written at debug')
    expect(texts).not.toContain('not written at error')
  })
})
