/**
 * `log.to = off | file | console | both` and the log file's rotation, as EMQ X 4 has them
 * (`log.dir`, `log.file`, `log.rotation.size`, `log.rotation.count`), against real
 * `bin/starling` processes. Needs `npm run build`.
 */
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, chmodSync } from 'node:fs'
import { join } from 'node:path'
import {
  EPHEMERAL_ENV, PROJECT_ROOT, childEnv, closeProcessClients, killAllNodes, runCtl, runProgram,
  spawnNode, stopNode, tempDir, within, type Exit
} from '../helpers/process.js'

const modeOf = (path: string): number => statSync(path).mode & 0o777

/** The JSON lines of a text (other lines skipped). */
function jsonLines (text: string): Array<Record<string, any>> {
  return text.split('\n').flatMap(line => {
    try { return [JSON.parse(line)] } catch { return [] }
  })
}

/** The log file's lines, or [] when it is not there. */
function fileLines (path: string): Array<Record<string, any>> {
  return existsSync(path) ? jsonLines(readFileSync(path, 'utf8')) : []
}

async function until (predicate: () => boolean, what: string, ms = 10000): Promise<void> {
  await within((async () => { while (!predicate()) await new Promise(resolve => setTimeout(resolve, 50)) })(), ms, what)
}

/**
 * A node whose log is not on standard output (`log.to = file | off`), so `spawnNode` cannot
 * read its listeners' ports: started bare, ready once it prints "is running now!".
 */
async function startQuietNode (vars: Record<string, string>): Promise<{ stdout: () => string, stop: () => Promise<Exit> }> {
  const env = { ...EPHEMERAL_ENV, STARLING_NODE__DATA_DIR: join(tempDir(), 'data'), ...vars }
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'bin/starling')], { cwd: PROJECT_ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => { out += c })
  child.stderr.setEncoding('utf8').on('data', (c: string) => { err += c })
  const exited = new Promise<Exit>(resolve => child.once('exit', (code, signal) => resolve({ code, signal })))
  try {
    await until(() => out.includes('is running now!') || child.exitCode !== null, 'the node start')
  } catch (e) {
    child.kill('SIGKILL')
    throw e
  }
  if (child.exitCode !== null) throw new Error(`node exited: ${err}`)
  return {
    stdout: () => out,
    stop: async () => { child.kill('SIGTERM'); return await exited }
  }
}

afterEach(async () => { await closeProcessClients() })
afterAll(async () => { await killAllNodes() })

describe('log.to = file', () => {
  it('writes JSON lines to log.dir/log.file (dir 0700, file 0600) and nothing to standard output, flushed on stop', async () => {
    const dir = join(tempDir(), 'logs')
    const node = await startQuietNode({ STARLING_LOG__TO: 'file', STARLING_LOG__DIR: dir })
    const path = join(dir, 'starling.log')
    await until(() => fileLines(path).some(l => l.msg === 'listener started'), 'listener lines in the log file')
    expect(modeOf(dir)).toBe(0o700)
    expect(modeOf(path)).toBe(0o600)
    // the console has bin/starling's own "Start ... successfully." lines, no log line
    expect(jsonLines(node.stdout())).toEqual([])
    expect(await node.stop()).toEqual({ code: 0, signal: null })
    const lines = fileLines(path)
    expect(lines.at(-1)).toMatchObject({ msg: 'stopped', node: 'starling@127.0.0.1', level: 30 })
    // every line of the file is a whole JSON line
    expect(readFileSync(path, 'utf8').trimEnd().split('\n')).toHaveLength(lines.length)
  })

  it('resolves a relative log.dir against the installation root', async () => {
    // the root is the checkout here: a directory name of our own, removed afterwards
    const name = `.log-test-${process.pid}`
    const node = await startQuietNode({ STARLING_LOG__TO: 'file', STARLING_LOG__DIR: name, STARLING_LOG__FILE: 'node1.log' })
    try {
      await until(() => fileLines(join(PROJECT_ROOT, name, 'node1.log')).length > 0, 'the log file under the root')
    } finally {
      await node.stop()
      rmSync(join(PROJECT_ROOT, name), { recursive: true, force: true })
    }
  })

  it('appends to an existing file and closes its mode to 0600', async () => {
    const dir = tempDir()
    const path = join(dir, 'starling.log')
    writeFileSync(path, '{"msg":"from before"}\n')
    chmodSync(path, 0o644)
    chmodSync(dir, 0o755)
    const node = await startQuietNode({ STARLING_LOG__TO: 'file', STARLING_LOG__DIR: dir })
    await node.stop()
    expect(modeOf(path)).toBe(0o600)
    // an existing directory keeps its mode (it may be shared, such as /var/log)
    expect(modeOf(dir)).toBe(0o755)
    const lines = fileLines(path)
    expect(lines[0]).toEqual({ msg: 'from before' })
    expect(lines.at(-1)?.msg).toBe('stopped')
  })
})

describe('log.to = both', () => {
  it('writes every line to standard output and to the file, rotating at log.rotation.size and keeping log.rotation.count files', async () => {
    const dir = join(tempDir(), 'logs')
    // debug at start writes several KB: enough for a few rotations of 1KB
    const node = await spawnNode({ env: { STARLING_LOG__TO: 'both', STARLING_LOG__DIR: dir, STARLING_LOG__LEVEL: 'debug', STARLING_LOG__ROTATION__SIZE: '1KB', STARLING_LOG__ROTATION__COUNT: '3' } })
    // starling-ctl commands log too
    for (const level of ['info', 'debug']) expect((await runCtl(['log', 'set-level', level], node.env)).code).toBe(0)
    expect(await stopNode(node)).toEqual({ code: 0, signal: null })
    // EMQ X's numbering: the current file, then .1 (newest archive) .. .<count - 1>
    expect(readdirSync(dir).sort()).toEqual(['starling.log', 'starling.log.1', 'starling.log.2'])
    const files = ['starling.log.2', 'starling.log.1', 'starling.log'].map(f => join(dir, f))
    for (const file of files) {
      expect([file, modeOf(file)]).toEqual([file, 0o600])
      expect(statSync(file).size).toBeLessThanOrEqual(1024)
      expect(statSync(file).size).toBeGreaterThan(0)
    }
    // oldest to newest, the files hold the last lines of standard output, in order, with no gap
    const kept = files.map(f => readFileSync(f, 'utf8')).join('')
    const stdoutLog = node.stdout().split('\n').filter(l => l.startsWith('{')).map(l => l + '\n').join('')
    expect(stdoutLog.length).toBeGreaterThan(kept.length)
    expect(stdoutLog.endsWith(kept)).toBe(true)
    expect(jsonLines(kept).at(-1)?.msg).toBe('stopped')
  })

  it.each([
    // at debug the stop writes its debug lines (store closed ...) to the file
    ['debug', (lines: Array<Record<string, any>>) => expect(lines.some(l => l.level === 20)).toBe(true)],
    // at error the stop's info lines (stopping, stopped) are not written
    ['error', (lines: Array<Record<string, any>>) => expect(lines.filter(l => l.level < 50)).toEqual([])]
  ])('changes the file\'s level with starling-ctl log set-level %s', async (level, check) => {
    const dir = tempDir()
    const path = join(dir, 'starling.log')
    // no sysmon warnings: a loaded machine's long_schedule lines would race the level change
    const node = await spawnNode({ env: { STARLING_LOG__TO: 'both', STARLING_LOG__DIR: dir, STARLING_SYSMON__LONG_SCHEDULE: '0' } })
    await until(() => fileLines(path).some(l => l.msg === 'listener started'), 'the start in the file')
    const before = fileLines(path)
    expect(before.some(l => l.level === 20)).toBe(false)
    expect((await runCtl(['log', 'set-level', level], node.env)).code).toBe(0)
    expect(await stopNode(node)).toEqual({ code: 0, signal: null })
    const after = fileLines(path).slice(before.length)
    check(after)
  })
})

describe('log.to = off', () => {
  it('writes no log line anywhere and creates no log file', async () => {
    const dir = join(tempDir(), 'logs')
    const node = await startQuietNode({ STARLING_LOG__TO: 'off', STARLING_LOG__DIR: dir, STARLING_LOG__LEVEL: 'debug' })
    expect(await node.stop()).toEqual({ code: 0, signal: null })
    expect(jsonLines(node.stdout())).toEqual([])
    expect(existsSync(dir)).toBe(false)
  })
})

describe('bad log settings', () => {
  it.each([
    ['STARLING_LOG__TO', 'syslog', 'log.to'],
    ['STARLING_LOG__ROTATION__SIZE', '100', 'log.rotation.size'],
    ['STARLING_LOG__ROTATION__SIZE', 'big', 'log.rotation.size'],
    ['STARLING_LOG__ROTATION__COUNT', '0', 'log.rotation.count'],
    ['STARLING_LOG__FILE', 'sub/starling.log', 'log.file'],
    ['STARLING_LOG__DIR', '', 'log.dir']
  ])('%s=%j stops the start with one line naming %s', async (variable, value, key) => {
    const r = await runProgram('bin/starling', [], { ...EPHEMERAL_ENV, STARLING_NODE__DATA_DIR: tempDir(), STARLING_LOG__TO: 'file', STARLING_LOG__DIR: tempDir(), [variable]: value })
    expect(r.code).toBe(1)
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(r.stderr).toContain(key)
  })

  it('stops the start with one line naming log.dir when the log file cannot be opened', async () => {
    const dir = tempDir()
    // a file where the directory should be
    writeFileSync(join(dir, 'logs'), '')
    const r = await runProgram('bin/starling', [], { ...EPHEMERAL_ENV, STARLING_NODE__DATA_DIR: join(dir, 'data'), STARLING_LOG__TO: 'both', STARLING_LOG__DIR: join(dir, 'logs') })
    expect(r.code).toBe(1)
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(r.stderr).toMatch(/^starling: log\.dir: .*logs/)
  })
})
