/**
 * Idle node memory (issue 22: at most 30 MB above a bare Node.js process). Starts a default
 * node (`bin/starling`, its default plugins, every listener on an ephemeral port) and, beside it,
 * a bare `node -e` process that only keeps its event loop alive; after both have been idle for
 * `--settle` seconds it reads their VmRSS from /proc. `--imports` also measures what single
 * modules cost: each is imported alone into a fresh process, idle for the same time, and its RSS
 * is shown beside the bare process's. Rounds run one after another; the table shows medians.
 * `--packages` prints the npm packages the idle node resolved (the module hook of
 * test/helpers/loaded-packages.mjs). Run by hand; numbers go into docs/performance.md.
 *
 * Variants measured in the same rounds, beside the default node: `--compare <dir>` another
 * build (a repository root, built: the A/B against a baseline), `--knock` a node whose cluster
 * port took one TCP connection (libp2p started, cluster/mesh-door.ts), `--node-options
 * <flags>` a node run with those V8/Node flags (e.g. `--max-semi-space-size=8`).
 *
 *   npx tsc -p tsconfig.build.json && node dist/bench/idle-node.js [--rounds 3] [--settle 10]
 *     [--imports libp2p,@libp2p/gossipsub,./dist/rules/index.js] [--packages]
 *     [--compare /tmp/base] [--knock] [--node-options=--max-semi-space-size=8]
 */
import { spawn } from 'node:child_process'
import { createConnection } from 'node:net'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { startBroker, starlingTarget, type BrokerTarget } from './broker-process.js'

const benchDir = path.dirname(fileURLToPath(import.meta.url))
/** dist/bench/idle-node.js → repository root. */
const repoRoot = path.resolve(benchDir, '..', '..')

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    settle: { type: 'string', default: '10' },
    imports: { type: 'string', default: '' },
    packages: { type: 'boolean', default: false },
    compare: { type: 'string', default: '' },
    knock: { type: 'boolean', default: false },
    'node-options': { type: 'string', default: '' }
  }
})
const rounds = Number(values.rounds)
const settleMs = Number(values.settle) * 1000

/** VmRSS of `pid` in MiB (0 when it is gone). */
function rssMb (pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match === null ? 0 : Number(match[1]) / 1024
  } catch {
    return 0
  }
}

/**
 * RSS of a `node` process running `script` (an ES module given to `-e`) after `settleMs` idle.
 * The script must keep the process alive; it is killed once read.
 */
async function scriptRss (script: string): Promise<number> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'inherit'] })
  await new Promise((resolve) => setTimeout(resolve, settleMs))
  if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`)
  const rss = rssMb(child.pid as number)
  const gone = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await gone
  return rss
}

/** The process that only keeps its event loop alive: what Node.js itself costs. */
const BARE = 'setInterval(() => {}, 1 << 30)'

/** A process that imports `specifier` (a package name, or a path from the repository root) and idles. */
function importScript (specifier: string): string {
  const target = specifier.startsWith('.') ? pathToFileURL(path.join(repoRoot, specifier)).href : specifier
  return `await import(${JSON.stringify(target)}); ${BARE}`
}

/** How a measured node differs from the default one. */
interface NodeVariant {
  /** Repository root of the build to run (default this one). */
  root?: string
  /** Extra environment (NODE_OPTIONS ...). */
  env?: Record<string, string>
  /** Connect once to the node's cluster port after its start (libp2p starts then). */
  knock?: boolean
}

/** Opens a TCP connection to `port` on loopback and closes it once connected. */
async function knockOn (port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    socket.once('connect', () => { socket.destroy(); resolve() })
    socket.once('error', reject)
  })
}

/** RSS of a default node after `settleMs` idle; with `hookFile`, the packages it resolved are written there at exit. */
async function nodeRss (variant: NodeVariant = {}, hookFile?: string): Promise<number> {
  const base = starlingTarget(variant.root ?? repoRoot)
  const hook = path.join(repoRoot, 'test/helpers/loaded-packages.mjs')
  const target: BrokerTarget = {
    ...base,
    command: (port, dataDir) => {
      const cmd = base.command(port, dataDir)
      const env = { ...cmd.env, ...variant.env }
      if (hookFile !== undefined) Object.assign(env, { NODE_OPTIONS: `${env.NODE_OPTIONS ?? ''} --import ${hook}`.trim(), LOADED_PACKAGES_FILE: hookFile })
      return { ...cmd, env }
    }
  }
  const broker = await startBroker(target, 1024, variant.root ?? repoRoot)
  if (variant.knock === true) {
    const banner = /Start cluster listener on [^ ]*:(\d+) successfully/
    for (let i = 0; i < 50 && !banner.test(broker.output()); i++) await new Promise((resolve) => setTimeout(resolve, 100))
    const port = banner.exec(broker.output())?.[1]
    if (port === undefined) throw new Error(`no cluster port in the node's output:\n${broker.output()}`)
    await knockOn(Number(port))
  }
  await new Promise((resolve) => setTimeout(resolve, settleMs))
  const rss = rssMb(broker.pid)
  const exited = broker.exited()
  await broker.stop()
  if (exited || rss === 0) throw new Error(`the node exited while idle:\n${broker.output()}`)
  return rss
}

function median (xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? 0
}

const samples = new Map<string, number[]>()
function record (name: string, rss: number): void {
  samples.set(name, [...(samples.get(name) ?? []), rss])
}

const imports = values.imports.split(',').filter((s) => s !== '')
const variants: Array<[string, NodeVariant]> = [['default node', {}]]
if (values.compare !== '') variants.push([`default node (${values.compare})`, { root: path.resolve(values.compare) }])
if (values.knock) variants.push(['node, cluster port knocked', { knock: true }])
if (values['node-options'] !== '') variants.push([`node ${values['node-options']}`, { env: { NODE_OPTIONS: values['node-options'] } }])
for (let round = 1; round <= rounds; round++) {
  // the bare process and the nodes are read at the same time, so machine load hits all alike
  const [bare, ...nodes] = await Promise.all([scriptRss(BARE), ...variants.map(async ([, variant]) => await nodeRss(variant))])
  record('bare node -e', bare)
  variants.forEach(([name], i) => { record(name, nodes[i]) })
  for (const specifier of imports) record(`import ${specifier}`, await scriptRss(importScript(specifier)))
  console.error(`round ${round}: bare ${bare.toFixed(1)} MiB, ${variants.map(([name], i) => `${name} ${nodes[i].toFixed(1)} MiB`).join(', ')}`)
}

const bare = median(samples.get('bare node -e') ?? [])
console.table([...samples].map(([name, xs]) => ({
  process: name,
  'RSS MiB (median)': Number(median(xs).toFixed(1)),
  'above bare MiB': Number((median(xs) - bare).toFixed(1)),
  runs: xs.map((x) => x.toFixed(0)).join(' ')
})))

if (values.packages) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'idle-node-'))
  const file = path.join(dir, 'packages.txt')
  await nodeRss({}, file)
  console.log('packages an idle default node resolved:\n' + readFileSync(file, 'utf8').trim().split('\n').join(' '))
  rmSync(dir, { recursive: true, force: true })
}
