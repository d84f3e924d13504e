/**
 * A `starling-ctl` command answers quickly: the program loads the command tables (words,
 * arguments, how a result prints), the configuration loader and the control client, never
 * the node's parts (the store, the MQTT core, the cluster, the API, the plugins), which took
 * it 0.3 s on an idle machine and 1.4-10 s on a loaded one (docs/performance.md). The timing
 * bound is loose (CI machines are loaded); the list of loaded modules is the exact check.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { PROJECT_ROOT, childEnv, spawnNode, killAllNodes, tempDir, type NodeProcess } from '../helpers/process.js'
import { ALL_CTL_COMMANDS } from '../../bin/ctl-commands.js'
import { ROOM_PLUGINS } from '../../plugins/index.js'

let node: NodeProcess
beforeAll(async () => { node = await spawnNode() })
afterAll(async () => { await killAllNodes() })

/** Runs `bin/starling-ctl ...args` as a user does (the launcher, through its shell) and times it. */
async function timedCtl (args: string[], env: Record<string, string>, extraArgv: string[] = []): Promise<{ ms: number, code: number | null, stdout: string }> {
  const start = performance.now()
  const argv = extraArgv.length === 0 ? [join(PROJECT_ROOT, 'bin/starling-ctl'), ...args] : [process.execPath, ...extraArgv, ...args]
  const child = spawn(argv[0], argv.slice(1), { cwd: PROJECT_ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'inherit'] })
  let stdout = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c })
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  return { ms: performance.now() - start, code, stdout }
}

it('loads no part of the node: no store, MQTT core, cluster, API or logger', async () => {
  // test/helpers/loaded-packages.mjs lists the npm packages, then the dist/ modules, the program resolved
  const list = join(tempDir(), 'loaded.txt')
  const r = await timedCtl(['status'], { ...node.env, LOADED_PACKAGES_FILE: list },
    ['--import', join(PROJECT_ROOT, 'test/helpers/loaded-packages.mjs'), join(PROJECT_ROOT, 'dist/bin/starling-ctl.js')])
  expect(r.code).toBe(0)
  const loaded = readFileSync(list, 'utf8').trim().split('\n')
  for (const heavy of ['lmdb', 'pino', 'libp2p', '@libp2p/tcp', 'aedes', 'express', 'mqtt', 'ws', 'ajv', 'jose']) {
    expect({ heavy, loaded: loaded.includes(heavy) }).toEqual({ heavy, loaded: false })
  }
  // the command tables, the configuration loader and the control client: about 45 of the
  // project's modules (the whole node is near 400)
  expect(loaded.filter((m) => m.startsWith('dist/')).length).toBeLessThan(80)
})

it('answers status in well under a second (median of five calls)', async () => {
  const times: number[] = []
  for (let i = 0; i < 5; i++) {
    const r = await timedCtl(['status'], node.env)
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('is started')
    times.push(r.ms)
  }
  times.sort((a, b) => a - b)
  // 0.1 s on an idle 2-core machine (docs/performance.md); a loaded CI machine gets ten times that
  expect(times[2]).toBeLessThan(1000)
})

it('lists every plugin\'s commands, which it names without loading the plugins', () => {
  for (const plugin of ROOM_PLUGINS) {
    for (const command of plugin.ctl ?? []) expect({ plugin: plugin.name, command: command.words.join(' '), listed: ALL_CTL_COMMANDS.includes(command) }).toEqual({ plugin: plugin.name, command: command.words.join(' '), listed: true })
  }
})
