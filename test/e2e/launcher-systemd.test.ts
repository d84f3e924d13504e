/**
 * etc/systemd/starling.service runs what it says: its ExecStart (`bin/starling foreground`) with
 * its Environment= lines (the etc, data and log directories moved to temporary ones) starts a
 * node that answers `ping` and stops cleanly on its KillSignal, exit 0. (No systemd here:
 * the unit's lines are run as systemd would run them. The release tarball that carries the
 * unit is built, unpacked and run as a non-root user by scripts/release-smoke.sh in CI.)
 */
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PROJECT_ROOT, EPHEMERAL_ENV, childEnv, runProgram, tempDir, killAllNodes } from '../helpers/process.js'
import { waitFor } from '../helpers/node.js'
import { loadConfig } from '../../node/config/index.js'

afterAll(async () => { await killAllNodes() })

const unit = readFileSync(join(PROJECT_ROOT, 'etc/systemd/starling.service'), 'utf8')
const directive = (name: string): string[] => [...unit.matchAll(new RegExp(`^${name}=(.*)$`, 'gm'))].map((m) => m[1])

it('runs bin/starling foreground from the installation, its environment made of known settings', () => {
  expect(directive('ExecStart')).toEqual(['/opt/starling/bin/starling foreground'])
  expect(directive('WorkingDirectory')).toEqual(['/opt/starling'])
  expect(directive('KillSignal')).toEqual(['SIGTERM'])
  const env = Object.fromEntries(directive('Environment').map((e) => e.split('=', 2) as [string, string]))
  expect(Object.keys(env).sort()).toEqual(['STARLING_ETC_DIR', 'STARLING_LOG__DIR', 'STARLING_NODE__DATA_DIR'])
  // every variable is a setting the node knows (a typo would stop the node at start)
  expect(() => loadConfig({ env, root: PROJECT_ROOT })).not.toThrow()
})

it('starts the node as systemd would, which answers ping and exits 0 on SIGTERM', async () => {
  const dir = tempDir()
  const moved: Record<string, string> = { '/etc/starling': join(dir, 'etc'), '/var/lib/starling': join(dir, 'data'), '/var/log/starling': join(dir, 'log') }
  const env: Record<string, string> = { ...EPHEMERAL_ENV }
  for (const line of directive('Environment')) {
    const [name, value] = line.split('=', 2)
    env[name] = moved[value] ?? value
  }
  const [program, ...args] = directive('ExecStart')[0].replace('/opt/starling/', `${PROJECT_ROOT}`).split(' ')
  const child = spawn(program, args, { cwd: PROJECT_ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => { out += c })
  child.stderr.setEncoding('utf8').on('data', (c: string) => { out += c })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  try {
    await waitFor(() => existsSync(join(dir, 'data', 'starling.pid')) || child.exitCode !== null, 'the node to start', 30000)
    expect(out).toContain('is running now!')
    expect(await runProgram('bin/starling', ['ping'], env)).toMatchObject({ code: 0, stdout: 'pong\n' })
    // the etc directory was seeded: the user's settings live outside the installation
    expect(existsSync(join(dir, 'etc', 'starling.conf'))).toBe(true)
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL')
  }
})
