/**
 * bin/optimizers.ts: the `starling` program starts without V8's optimizing compilers and
 * turns them on at its node's first busy second; flags the user gave Node.js are left alone.
 * Each case runs in a Node.js process of its own (the flags are the process's), importing the
 * built module as bin/starling.ts does, and asks V8 (`%GetOptimizationStatus`) what became of
 * a hot function.
 */
import { spawn } from 'node:child_process'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { closeProcessClients, connectTo, killAllNodes, spawnNode } from '../helpers/process.js'
import { waitFor } from '../helpers/node.js'

const ROOT = resolve(fileURLToPath(import.meta.url), '../../..')
const MODULE = pathToFileURL(join(ROOT, 'dist/bin/optimizers.js')).href

/** V8's optimization status bits (src/runtime/runtime.h, OptimizationStatus). */
const MAGLEVVED = 1 << 5
const TURBOFANNED = 1 << 6

const SCRIPT = `
import { optimizers } from ${JSON.stringify(MODULE)}
function hot (a) { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * 2; return s }
const arr = Array.from({ length: 200 }, (_, i) => i)
const run = (n) => { for (let i = 0; i < n; i++) hot(arr) }
const status = () => %GetOptimizationStatus(hot)
run(50000)
const idle = { deferred: optimizers.deferred, started: optimizers.started(), status: status() }
let why = ''
optimizers.watch((w) => { why = w })
// busy for two of the watch's looks, then give V8 a moment to compile
const until = Date.now() + 2500
while (Date.now() < until) { run(2000); await new Promise((r) => setImmediate(r)) }
run(50000)
console.log(JSON.stringify({ idle, busy: { started: optimizers.started(), why, status: status() } }))
`

async function runScript (nodeFlags: string[]): Promise<any> {
  return await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeFlags, '--allow-natives-syntax', '--input-type=module', '-e', SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => { out += String(d) })
    child.stderr.on('data', (d) => { err += String(d) })
    child.on('error', reject)
    child.on('exit', (code) => code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`exit ${code}: ${err}`)))
  })
}

describe('the launcher\'s optimizing compilers (bin/optimizers.ts)', () => {
  afterAll(async () => {
    await closeProcessClients()
    await killAllNodes()
  })

  it('come on in a node at its first client\'s CONNECT: not during its start, and with no busy second before', async () => {
    const node = await spawnNode({ env: { STARLING_LOG__LEVEL: 'info' } })
    const turnedOn = (): Array<Record<string, any>> => node.logLines().filter((l) => l.msg === 'optimizing compilers on')
    expect(turnedOn()).toEqual([])
    await connectTo(node.port('mqtt:tcp'))
    await waitFor(() => turnedOn().length > 0, 'the compilers to come on')
    expect(turnedOn().map((l) => l.why)).toEqual(['first client'])
  }, 30000)

  it('are off until the process is busy, then optimize what is hot', async () => {
    const r = await runScript([])
    expect(r.idle.deferred).toBe(true)
    expect(r.idle.started).toBe(false)
    expect(r.idle.status & (MAGLEVVED | TURBOFANNED)).toBe(0)
    expect(r.busy.started).toBe(true)
    expect(r.busy.why).toMatch(/^event loop busy \d+% of a second$/)
    expect(r.busy.status & (MAGLEVVED | TURBOFANNED)).not.toBe(0)
  }, 20000)

  it('leave the user\'s own flags alone', async () => {
    const off = await runScript(['--no-opt'])
    expect(off.idle.deferred).toBe(false)
    expect(off.busy.status & TURBOFANNED).toBe(0)
    const on = await runScript(['--maglev'])
    expect(on.idle.deferred).toBe(false)
    expect(on.idle.status & (MAGLEVVED | TURBOFANNED)).not.toBe(0)
  }, 20000)
})
