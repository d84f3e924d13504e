/**
 * `bin/starling start | stop | restart | ping | console | foreground`, as EMQ X's `emqx`
 * script: a daemon with a pid file in the data directory, its output and log in files in the
 * log directory, `ping` answering `pong`, `stop` returning once the node has exited; and the
 * user's etc directory (`--etc-dir`, `STARLING_ETC_DIR`) outside the installation, holding
 * their starling.conf, acl.conf and plugins/*.conf. Each program runs as a child process.
 */
import { existsSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { EPHEMERAL_ENV, runProgram, runCtl, tempDir, killAllNodes, connectTo, closeProcessClients } from '../helpers/process.js'
import { waitFor } from '../helpers/node.js'

/** Whether `pid` runs (a zombie has exited). */
const alive = (pid: number): boolean => { try { process.kill(pid, 0); return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8')) } catch { return false } }

const daemons = new Set<number>()
afterEach(async () => { await closeProcessClients() })
afterAll(async () => {
  for (const pid of daemons) if (alive(pid)) process.kill(pid, 'SIGKILL')
  await killAllNodes()
})

const modeOf = (path: string): number => statSync(path).mode & 0o777

/** A daemon's environment: ephemeral listeners, its own data and log directories. */
function daemonEnv (extra: Record<string, string> = {}): Record<string, string> {
  const dir = tempDir()
  return { ...EPHEMERAL_ENV, STARLING_NODE__DATA_DIR: join(dir, 'data'), STARLING_LOG__DIR: join(dir, 'log'), ...extra }
}

async function starling (args: string[], env: Record<string, string>): ReturnType<typeof runProgram> {
  const r = await runProgram('bin/starling', args, env, 60000)
  const pidFile = join(env.STARLING_NODE__DATA_DIR ?? '', 'starling.pid')
  if (args[0] === 'start' && existsSync(pidFile)) daemons.add(Number(readFileSync(pidFile, 'utf8')))
  return r
}

/** The MQTT port the daemon reported in its console file. */
function tcpPort (env: Record<string, string>): number {
  const text = readFileSync(join(env.STARLING_LOG__DIR, 'console.log'), 'utf8')
  const ports = [...text.matchAll(/Start mqtt:tcp listener on 127\.0\.0\.1:(\d+) successfully/g)]
  return Number(ports[ports.length - 1][1])
}

describe('a daemon', () => {
  it('starts, answers ping, restarts under a new pid and stops, waiting for the exit', async () => {
    const env = daemonEnv()
    expect(await starling(['ping'], env)).toMatchObject({ code: 1, stdout: '', stderr: "Node 'starling@127.0.0.1' not responding to pings.\n" })
    const started = await starling(['start'], env)
    expect(started).toMatchObject({ code: 0, stdout: 'Starling v0.1.0 (starling@127.0.0.1) is started successfully!\n', stderr: '' })
    const pidFile = join(env.STARLING_NODE__DATA_DIR, 'starling.pid')
    const pid = Number(readFileSync(pidFile, 'utf8'))
    expect(alive(pid)).toBe(true)
    expect(modeOf(pidFile)).toBe(0o600)
    expect(modeOf(env.STARLING_NODE__DATA_DIR)).toBe(0o700)
    expect(await starling(['ping'], env)).toMatchObject({ code: 0, stdout: 'pong\n' })
    // detached: the listener lines in console.log, the log in the log file, nothing on a terminal
    expect(readFileSync(join(env.STARLING_LOG__DIR, 'console.log'), 'utf8')).toContain('is running now!')
    expect(readFileSync(join(env.STARLING_LOG__DIR, 'starling.log'), 'utf8')).toContain('"msg":"listener started"')
    expect((await connectTo(tcpPort(env))).connected).toBe(true)
    await closeProcessClients()
    // a second start finds it running and starts nothing
    expect(await starling(['start'], env)).toMatchObject({ code: 1, stderr: "starling: node 'starling@127.0.0.1' is already running\n" })
    expect(await runCtl(['status'], env)).toMatchObject({ code: 0 })

    expect(await starling(['restart'], env)).toMatchObject({ code: 0, stdout: 'ok\nStarling v0.1.0 (starling@127.0.0.1) is started successfully!\n' })
    expect(alive(pid)).toBe(false)
    const pid2 = Number(readFileSync(pidFile, 'utf8'))
    expect(pid2).not.toBe(pid)

    expect(await starling(['stop'], env)).toMatchObject({ code: 0, stdout: 'ok\n' })
    // stop returned after the exit: the process is gone and its pid file removed
    expect(alive(pid2)).toBe(false)
    expect(existsSync(pidFile)).toBe(false)
    expect(await starling(['stop'], env)).toMatchObject({ code: 1 })
    expect(await starling(['ping'], env)).toMatchObject({ code: 1 })
  })

  it('reports a node that fails to start with its output, exit 1', async () => {
    const env = daemonEnv({ STARLING_LISTENER__TCP__EXTERNAL: '203.0.113.1:1883' })
    const r = await starling(['start'], env)
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('starling: the node stopped while starting (exit code 1)')
    expect(r.stderr).toContain('cannot listen on 203.0.113.1:1883 (listener.tcp.external)')
  })

  it('runs in the foreground with `foreground` and `console` as without a command, stopping on SIGTERM', async () => {
    for (const command of ['foreground', 'console']) {
      const env = daemonEnv({ STARLING_LOG__TO: 'file' })
      const run = runProgram('bin/starling', [command], env, 30000)
      const pidFile = join(env.STARLING_NODE__DATA_DIR, 'starling.pid')
      await waitFor(() => existsSync(pidFile), 'the pid file', 20000)
      const pid = Number(readFileSync(pidFile, 'utf8'))
      process.kill(pid, 'SIGTERM')
      const r = await run
      expect({ command, code: r.code }).toEqual({ command, code: 0 })
      expect(r.stdout).toContain('is running now!')
      // console: the log on the console whatever log.to says; foreground: as configured (the file)
      expect({ command, consoleLog: r.stdout.includes('"msg":"listener started"') }).toEqual({ command, consoleLog: command === 'console' })
    }
  })
})

describe('the user\'s etc directory', () => {
  it('is seeded once from the installation, 0600, then read: the user\'s files are never replaced', async () => {
    const etc = join(tempDir(), 'etc')
    const env = daemonEnv({ STARLING_ETC_DIR: etc })
    expect(await starling(['start'], env)).toMatchObject({ code: 0 })
    for (const file of ['starling.conf', 'acl.conf', 'plugins/svc_retainer.conf']) expect([file, modeOf(join(etc, file))]).toEqual([file, 0o600])
    expect(modeOf(etc)).toBe(0o700)
    // the TLS listeners' development certificate is made in the user's etc directory, not the installation's
    expect(existsSync(join(etc, 'certs', 'key.pem'))).toBe(true)
    expect(await starling(['stop'], env)).toMatchObject({ code: 0 })

    // the user's own settings: an ACL denying one topic, a data directory named only in their file
    writeFileSync(join(etc, 'acl.conf'), '{deny, all, subscribe, ["secret/#"]}.\n{allow, all}.\n')
    const dataDir = join(tempDir(), 'elsewhere')
    writeFileSync(join(etc, 'starling.conf'), `node.data_dir = ${dataDir}\n`)
    const { STARLING_NODE__DATA_DIR: _, ...rest } = env
    expect(await starling(['start', '--etc-dir', etc], { ...rest, STARLING_ETC_DIR: '' })).toMatchObject({ code: 0 })
    daemons.add(Number(readFileSync(join(dataDir, 'starling.pid'), 'utf8')))
    // starling-ctl finds the node through the same etc directory, given either way
    expect(await runCtl(['status'], { ...rest })).toMatchObject({ code: 0 })
    expect(await runCtl(['status', '--etc-dir', etc], { ...rest, STARLING_ETC_DIR: '' })).toMatchObject({ code: 0 })
    const client = await connectTo(tcpPort(env))
    await expect(client.subscribeAsync('secret/a')).rejects.toThrow('Subscribe error')
    expect((await client.subscribeAsync('open/a')).map((g) => g.qos)).toEqual([0])
    expect(readFileSync(join(etc, 'acl.conf'), 'utf8')).toContain('secret/#')
    expect(await starling(['stop'], { ...rest })).toMatchObject({ code: 0 })
  })

  it('holds the plugins\' files: a setting there applies', async () => {
    const etc = join(tempDir(), 'etc')
    mkdirSync(join(etc, 'plugins'), { recursive: true })
    // svc_auth_username with one user, in the user's plugins/ only (the rest seeded beside it)
    writeFileSync(join(etc, 'plugins', 'svc_auth_username.conf'), 'auth.user.1.username = alice\nauth.user.1.password = s3cret\n')
    const env = daemonEnv({ STARLING_ETC_DIR: etc })
    expect(await starling(['start'], env)).toMatchObject({ code: 0 })
    expect(await runCtl(['plugins', 'load', 'svc_auth_username'], env)).toMatchObject({ code: 0 })
    expect(readFileSync(join(etc, 'plugins', 'svc_auth_username.conf'), 'utf8')).toContain('alice')
    expect((await connectTo(tcpPort(env), { username: 'alice', password: 's3cret' })).connected).toBe(true)
    await expect(connectTo(tcpPort(env), { username: 'alice', password: 'wrong' })).rejects.toThrow()
    expect(await starling(['stop'], env)).toMatchObject({ code: 0 })
  })
})
