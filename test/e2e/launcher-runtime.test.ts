/**
 * The launchers run on the Node.js that `npm install` brought (node_modules/node, Node.js 24)
 * whatever `node` comes first on PATH: run directly, a shell hands them to that runtime
 * (bin/runtime.sh); given to an older `node` (`node bin/starling-ctl` on Debian 12's Node.js
 * 20), they hand themselves over to it (bin/node-version.js). Either way, no message and no
 * extra step. Only an installation without that runtime says what to do, and nothing the
 * project prints or documents suggests `npx starling` (an unrelated npm package).
 */
import { spawn } from 'node:child_process'
import { cpSync, existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PROJECT_ROOT, childEnv, tempDir, killAllNodes } from '../helpers/process.js'
import { VERSION } from '../../node/version.js'

afterAll(async () => { await killAllNodes() })

/** The machine's own Node.js (Debian's /usr/bin/node), when there is one. */
const SYSTEM_NODE = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => existsSync(p))

interface Run { code: number | null, stdout: string, stderr: string }

/** Runs `argv` with `PATH` starting at the system node's directory (so `node` is that one). */
async function run (argv: string[], cwd = PROJECT_ROOT): Promise<Run> {
  const dir = SYSTEM_NODE === undefined ? '' : SYSTEM_NODE.slice(0, SYSTEM_NODE.lastIndexOf('/')) + ':'
  const child = spawn(argv[0], argv.slice(1), { cwd, env: childEnv({ PATH: dir + (process.env.PATH ?? '') }), stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c })
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c })
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  return { code, stdout, stderr }
}

const bin = (name: string): string => join(PROJECT_ROOT, 'bin', name)

it('runs bin/starling and bin/starling-ctl directly with an older node first on PATH, silently', async () => {
  const node = await run([bin('starling'), '--version'], tempDir())
  expect(node).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' })
  const ctl = await run([bin('starling-ctl'), '--help'], tempDir())
  expect(ctl.stderr).toBe('')
  expect(ctl.code).toBe(0)
  expect(ctl.stdout).toContain('Usage: starling-ctl')
  // a command that reaches the node's configuration and reports it is not running
  const probe = await run([bin('starling-ctl'), 'status'], tempDir())
  expect(probe.code).toBe(1)
  expect(probe.stderr).toMatch(/^Node starling@127\.0\.0\.1 is not running/)
})

// a machine without a Node.js of its own (the Docker image's build) has nothing to hand over
const describeOld = SYSTEM_NODE !== undefined ? describe : describe.skip

describeOld('given to the machine\'s own node (an older one on Debian 12)', () => {
  it('hands itself over to the installation\'s Node.js, passing on the output and the exit code', async () => {
    const version = await run([SYSTEM_NODE!, bin('starling'), '--version'])
    expect(version).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' })
    const ctl = await run([SYSTEM_NODE!, bin('starling-ctl'), 'status'], tempDir())
    expect(ctl.code).toBe(1)
    expect(ctl.stdout).toBe('')
    expect(ctl.stderr).toMatch(/^Node starling@127\.0\.0\.1 is not running[^\n]*\n$/)
  })

  it('says what to do, without npx, in an installation that has no runtime of its own', async () => {
    const oldNode = (await run([SYSTEM_NODE!, '-p', 'process.versions.node'])).stdout.trim()
    if (Number(oldNode.split('.')[0]) >= 22) return // the machine's Node.js is new enough: nothing to say
    const copy = tempDir()
    cpSync(join(PROJECT_ROOT, 'bin'), join(copy, 'bin'), { recursive: true })
    const r = await run([join(copy, 'bin', 'starling-ctl'), 'status'], copy)
    expect(r.code).toBe(1)
    expect(r.stderr).toContain(`Node.js v${oldNode} is too old; Starling needs 22.13 or newer`)
    expect(r.stderr).toContain('npm install')
    expect(r.stderr).not.toContain('npx')
  })
})

it('never suggests `npx starling` (an unrelated npm package) in what it prints or documents', () => {
  const files = ['README.md', ...readdirSync(join(PROJECT_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`),
    ...readdirSync(join(PROJECT_ROOT, 'bin')).map((f) => `bin/${f}`), 'Dockerfile']
  for (const file of files) {
    expect({ file, npx: /npx starling/.test(readFileSync(join(PROJECT_ROOT, file), 'utf8')) }).toEqual({ file, npx: false })
  }
})
