/**
 * Buffers and traces are the node's user's only (issue 19, item 2), as the data directory
 * and the log file are: a replay queue's directory is 0700 and its files 0600 wherever it is
 * (a bridge's `queue.replayq_dir` outside node.data_dir), a trace file is 0600, whatever the
 * umask, and a directory or file left readable by an older version is closed up.
 *
 * The umask is set here (0022, the usual one; 0 in one case) so that a mode that only comes
 * from a restrictive umask cannot pass for one the node sets.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { closeClients, connect, freePort, waitFor } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'
import { startPluginNode, type PluginNode } from '../node/plugins/harness.js'
import { openReplayQueue } from '../../plugins/kit/replayq/replayq.js'

const modeOf = (path: string): number => statSync(path).mode & 0o777

/** `[path, mode]` of the directory and every entry under it, recursively. */
function modesUnder (dir: string): Array<[string, number]> {
  return [[dir, modeOf(dir)], ...readdirSync(dir, { withFileTypes: true }).flatMap((e): Array<[string, number]> =>
    e.isDirectory() ? modesUnder(join(dir, e.name)) : [[join(dir, e.name), modeOf(join(dir, e.name))]])]
}

/** The modes a private directory tree has: 0700 directories, 0600 files. */
function privateModes (dir: string): Array<[string, number]> {
  return modesUnder(dir).map(([path]) => [path, statSync(path).isDirectory() ? 0o700 : 0o600])
}

let umask: number
let scratch: string
beforeAll(() => { umask = process.umask(0o022) })
afterAll(() => { process.umask(umask) })
beforeEach(() => { scratch = mkdtempSync(join(tmpdir(), 'starling-modes-')) })
afterEach(() => { rmSync(scratch, { recursive: true, force: true }) })

describe('a bridge\'s replay queue outside the data directory', () => {
  let p: PluginNode | undefined
  afterEach(async () => { await closeClients(); await p?.destroy(); p = undefined })

  it('is created 0700, with the directories above it that it made, and its segments 0600', async () => {
    const outside = join(scratch, 'buffers', 'bridges', 'b1')
    p = await startPluginNode()
    p.writeConf('svc_bridge_mqtt', [
      `bridge.mqtt.b1.address = 127.0.0.1:${await freePort()}`,
      'bridge.mqtt.b1.forwards = f/#',
      `bridge.mqtt.b1.queue.replayq_dir = ${outside}`
    ].join('\n') + '\n')
    await p.manager.load('svc_bridge_mqtt')
    const client = await connect(p.node)
    await client.publishAsync('f/1', 'kept on disk', { qos: 1 })
    await waitFor(() => existsSync(outside) && readdirSync(outside).some((n) => n.endsWith('.seg')), 'a segment of the buffer')
    expect(modeOf(scratch)).toBe(0o700) // mkdtemp's, not ours: the queue changes nothing above what it made
    expect(modesUnder(join(scratch, 'buffers'))).toEqual(privateModes(join(scratch, 'buffers')))
  })
})

describe('the replay queue', () => {
  it('creates its directory 0700 and its files 0600 even with umask 0', async () => {
    const dir = join(scratch, 'q')
    const before = process.umask(0)
    try {
      const q = await openReplayQueue<Buffer>({ dir, commitIntervalMs: 0 })
      await q.append([Buffer.from('a'), Buffer.from('b')])
      q.ack(q.pop().ackRef)
      await q.close()
    } finally {
      process.umask(before)
    }
    expect(readdirSync(dir).length).toBeGreaterThan(0)
    expect(modesUnder(dir)).toEqual(privateModes(dir))
  })

  it('closes up a directory and files left readable by an older version when it opens', async () => {
    const dir = join(scratch, 'q')
    const q = await openReplayQueue<Buffer>({ dir })
    await q.append([Buffer.from('still queued')])
    await q.close()
    chmodSync(dir, 0o755)
    for (const name of readdirSync(dir)) chmodSync(join(dir, name), 0o644)
    writeFileSync(join(dir, 'COMMIT.tmp'), '') // a write an older version left half done
    chmodSync(join(dir, 'COMMIT.tmp'), 0o666)
    const again = await openReplayQueue<Buffer>({ dir })
    try {
      expect(again.stats().count).toBe(1)
      expect(modesUnder(dir)).toEqual(privateModes(dir))
    } finally {
      await again.close()
    }
  })
})

describe('trace files', () => {
  let p: PluginNode | undefined
  beforeAll(async () => { p = await startPluginNode() })
  afterAll(async () => { await p?.destroy() })
  const ctl = async (...argv: string[]): Promise<number> => (await runCtlOn(p!.node, argv)).code

  it('creates a trace file 0600, as the log file', async () => {
    const file = join(scratch, 'c1.trace')
    expect(await ctl('trace', 'start', 'client', 'c1', file)).toBe(0)
    expect(await ctl('trace', 'stop', 'client', 'c1')).toBe(0)
    expect(modeOf(file)).toBe(0o600)
  })

  it('makes an existing trace file 0600 and leaves a device alone', async () => {
    const file = join(scratch, 'old.trace')
    writeFileSync(file, 'an older trace\n')
    chmodSync(file, 0o644)
    expect(await ctl('trace', 'start', 'topic', 't/#', file)).toBe(0)
    expect(await ctl('trace', 'stop', 'topic', 't/#')).toBe(0)
    expect(modeOf(file)).toBe(0o600)
    const devNull = modeOf('/dev/null')
    expect(await ctl('trace', 'start', 'client', 'c2', '/dev/null')).toBe(0)
    expect(await ctl('trace', 'stop', 'client', 'c2')).toBe(0)
    expect(modeOf('/dev/null')).toBe(devNull)
  })
})

// the data directory's own check (data-dir-modes.test.ts) covers the rule bridges' queues under it
it('keeps a queue under the data directory private too', async () => {
  const data = join(scratch, 'data')
  mkdirSync(data, { mode: 0o700 })
  const q = await openReplayQueue<Buffer>({ dir: join(data, 'replayq', 'rule_x') })
  await q.append([Buffer.from('x')])
  await q.close()
  expect(modesUnder(join(data, 'replayq'))).toEqual(privateModes(join(data, 'replayq')))
})
