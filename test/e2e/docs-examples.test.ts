/**
 * The examples in README.md and docs/ run as written against a real node (`bin/starling`,
 * driven by `bin/starling-ctl` and curl in a shell): an example that shows its output
 * (`$ bin/starling-ctl ...` followed by what it prints) must print output of the same shape
 * (the same keys, table headers, JSON fields and fixed words; numbers, names, ids and paths
 * may differ), and a command without shown output must succeed. Examples that need a context
 * one node cannot give (another node, a broken file, a stopped node) are listed in
 * {@link NEEDS_CONTEXT} with the reason, and the test fails when that list goes stale.
 */
import { execFile } from 'node:child_process'
import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  spawnNode, killAllNodes, connectTo, closeProcessClients, tempDir, childEnv, PROJECT_ROOT, type NodeProcess
} from '../helpers/process.js'
import { startCodecServer, type CodecServer } from '../../rules/schemas/codec-server.js'

/** One example: where it is, the command line, and the output shown under it (null: none shown). */
interface Example { where: string, command: string, output: string | null }

/** Examples one node cannot run, by command line and the first line shown under it, with the reason. */
const NEEDS_CONTEXT: Record<string, string> = {
  'bin/starling-ctl cluster join starling@10.0.0.1 → Join the cluster successfully.': 'needs another node at 10.0.0.1 (test/cluster/processes.test.ts runs join)',
  'bin/starling-ctl --json cluster status → [': 'shows a two-node cluster (test/cluster/processes.test.ts)',
  'bin/starling-ctl acl reload → etc/acl.conf:3: expected allow or deny, got \'alow\'': 'needs a broken etc/acl.conf (test/e2e/acl-reload.test.ts)',
  'bin/starling-ctl status → etc/starling.conf:1: unknown key "node.nmae" (did you mean node.name?)': 'needs a broken config file (test/node/control/ctl-program.test.ts)',
  'bin/starling-ctl status → Node starling@127.0.0.1 is not running (no control socket at /opt/starling/data/starling-ctl.sock); start it with bin/starling': 'needs a stopped node (test/e2e/ctl.test.ts)',
  'bin/starling-ctl bridges list → name: aws     status: Running': 'needs svc_bridge_mqtt loaded with a bridge aws connected to a remote broker (test/e2e/bridges-ctl.test.ts)',
  'bin/starling-ctl bridges add-forward aws sensors/# → Add-forward topic successfully.': 'needs svc_bridge_mqtt loaded with a bridge aws (test/e2e/bridges-ctl.test.ts)',
  'bin/starling-ctl bridges forwards aws → topic:   topic1/#': 'needs svc_bridge_mqtt loaded with a bridge aws (test/e2e/bridges-ctl.test.ts)',
  'bin/starling-ctl data import /tmp/emqx-export-2022-11-3-10-12-40.json → The data has been imported successfully.': 'needs an EMQ X 4.4 backup there (test/e2e/data-backup.test.ts imports it from test/fixtures/backup/)',
  'bin/starling-ctl data import /tmp/emqx-export-2021-4-12-10-40-58.json → The data has been imported successfully.': 'needs an EMQ X 4.2 backup there (test/e2e/data-backup.test.ts imports it from test/fixtures/backup/)',
  'bin/starling-ctl data import /tmp/notes.json → the backup file is not JSON: Unexpected token \'#\', "# My notes" is not valid JSON': 'needs a file that is not JSON (test/e2e/data-backup.test.ts)'
}

/** An example's key in {@link NEEDS_CONTEXT}. */
const contextKey = (e: Example): string => `${e.command} → ${(e.output ?? '').split('\n')[0]}`

/** Every example of README.md and docs/*.md. */
function collectExamples (): Example[] {
  const files = ['README.md', ...readdirSync(join(PROJECT_ROOT, 'docs')).filter(f => f.endsWith('.md')).map(f => `docs/${f}`)]
  const examples: Example[] = []
  for (const file of files) {
    const lines = readFileSync(join(PROJECT_ROOT, file), 'utf8').split('\n')
    let inBlock = false
    let current: Example | null = null
    const flush = (): void => { if (current !== null) examples.push(current); current = null }
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]
      if (line.startsWith('```')) {
        flush()
        inBlock = !inBlock
        continue
      }
      if (!inBlock) continue
      const prompted = /^\$ ((?:bin\/starling-ctl|curl) .*)$/.exec(line)
      if (prompted !== null) {
        flush()
        current = { where: `${file}:${i + 1}`, command: prompted[1], output: '' }
        continue
      }
      if (current !== null && current.output !== null) {
        current.output += line + '\n'
        continue
      }
      // a shell command without shown output (not a synopsis with <placeholders> or [options])
      if (/^(bin\/starling-ctl|curl) /.test(line) && !/ \[|<[a-z]+>/.test(line)) {
        // a curl body or a command ending in \ may run over several lines
        let command = line.replace(/\s+#.*$/, '')
        while ((!balanced(command) || command.endsWith('\\')) && i + 1 < lines.length && !lines[i + 1].startsWith('```')) command += '\n' + lines[++i]
        examples.push({ where: `${file}:${i + 1}`, command, output: null })
      }
    }
    flush()
  }
  return examples
}

/** True when the single and double quotes of a shell line are closed. */
function balanced (command: string): boolean {
  let quote: string | null = null
  for (const ch of command) {
    if (quote === null && (ch === '\'' || ch === '"')) quote = ch
    else if (ch === quote) quote = null
  }
  return quote === null
}

/**
 * What must agree between shown and real output. JSON: its field names (of the first element
 * of an array). Text: per line, a table's header cells, a `key : value` line's key, and any
 * other line with its variable parts (numbers, names with @ . / :, quoted text) masked.
 */
function shape (text: string): string[] {
  const t = text.trim()
  if (t.startsWith('{') || t.startsWith('[')) {
    try { return [JSON.stringify(fieldsOf(JSON.parse(t)))] } catch { /* not JSON: text */ }
  }
  const out = new Set<string>()
  for (const line of t.split('\n')) {
    if (/^[┌├└]/.test(line)) continue
    if (line.startsWith('│')) { out.add('table ' + line.split('│').map(c => c.trim()).filter(c => c !== '').length); continue }
    const kv = /^(\s*[\w./-]+)\s*:\s/.exec(line)
    if (kv !== null) { out.add(kv[1].trim() + ':'); continue }
    out.add(line.replace(/'[^']*'|"[^"]*"|\S*[\d@/:]\S*/g, '*').trim())
  }
  return [...out].sort()
}

function fieldsOf (v: unknown): unknown {
  if (Array.isArray(v)) return v.length === 0 ? [] : [fieldsOf(v[0])]
  if (v !== null && typeof v === 'object') return Object.keys(v).sort()
  return typeof v
}

let node: NodeProcess
let cwd: string
let apiPort = 0
/** The dashboard listener's port (docs/dashboard.md's examples, there on 18083, as admin:public). */
let dashboardPort = 0
/** The reference codec service the 3rd-party schema examples name (there on 9003/9004). */
let codec: CodecServer

/** Runs `command` in bash as a user would, against the test node; exit code and output. */
async function run (command: string): Promise<{ code: number, out: string, stdout: string }> {
  const local = command
    .replace(/http:\/\/(127\.0\.0\.1|localhost):8080/g, `http://127.0.0.1:${apiPort}`)
    .replace(/http:\/\/(127\.0\.0\.1|localhost):18083/g, `http://127.0.0.1:${dashboardPort}`)
    .replace(/admin:<secret>/g, 'admin:public')
    .replace(/127\.0\.0\.1:9003\/codec/g, codec.httpUrl!.replace('http://', ''))
    .replace(/127\.0\.0\.1:9004/g, codec.tcpAddress!)
    .replace(/^bin\//, `${PROJECT_ROOT}/bin/`)
  return await new Promise(resolve => {
    execFile('bash', ['-c', local], { cwd, env: childEnv(node.env), timeout: 15000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, out: stdout + stderr, stdout })
    })
  })
}

/** The `code` of an API answer; NaN when it is not the API's JSON. */
function apiCode (body: string): number {
  try { return JSON.parse(body).code } catch { return NaN }
}

/**
 * The schema examples are alternatives, not one sequence: a schema an example creates is
 * deleted first when another example created it already.
 */
async function freeSchemaName (command: string): Promise<void> {
  const name = /schemas create (\S+)/.exec(command)?.[1] ?? (/\/api\/v3\/schemas /.test(command + ' ') && /-X POST/.test(command) ? /"name": "([^"]+)"/.exec(command)?.[1] : undefined)
  if (name === undefined) return
  await fetch(`http://127.0.0.1:${apiPort}/api/v3/schemas/${name}`, { method: 'DELETE', headers: { authorization: 'Basic ' + Buffer.from('admin:public').toString('base64') } })
}

/** What an example needs set up first, by command line. */
const SETUP: Record<string, () => Promise<void>> = {
  'bin/starling-ctl clients kick sensor-1': async () => {
    // the first kick finds the client connected, the second finds it gone
    if (!kicked) await connectTo(node.port('mqtt:tcp'), { clientId: 'sensor-1' })
    kicked = true
  }
}
let kicked = false

const examples = collectExamples()

beforeAll(async () => {
  cwd = tempDir()
  // files the examples read (docs/schema-registry.md shows their content)
  writeFileSync(join(cwd, 'sensor.avsc'), '{"type":"record","name":"Sensor","fields":[{"name":"id","type":"string"},{"name":"temp","type":"double"}]}')
  writeFileSync(join(cwd, 'sensor.proto'), 'syntax = "proto3";\nmessage Sensor { string id = 1; double temp = 2; }\n')
  codec = await startCodecServer({ http: {}, tcp: {} })
  node = await spawnNode({ env: { STARLING_MANAGEMENT__DEFAULT_APPLICATION__SECRET: 'public', STARLING_DASHBOARD__DEFAULT_USER__PASSWORD: 'public' } })
  apiPort = node.port('http:management' as any)
  dashboardPort = node.port('http:dashboard' as any)
}, 30000)
afterEach(async () => { await closeProcessClients() })
afterAll(async () => { await killAllNodes(); await codec?.close() })

it('finds the examples, and every example it does not run is still in the docs', () => {
  expect(examples.length).toBeGreaterThan(20)
  for (const key of Object.keys(NEEDS_CONTEXT)) expect(examples.map(contextKey)).toContain(key)
})

it('runs every example as written, with output of the shape the docs show', async () => {
  const failures: string[] = []
  let compared = 0
  for (const example of examples) {
    if (NEEDS_CONTEXT[contextKey(example)] !== undefined) continue
    if (/\bjq\b/.test(example.command)) continue // jq is the reader's tool, not the node's
    await SETUP[example.command]?.()
    await freeSchemaName(example.command)
    const { code, out, stdout } = await run(example.command)
    if (example.output === null) {
      if (code !== 0) failures.push(`${example.where}: \`${example.command}\` exited ${code}:\n${out}`)
      else if (example.command.startsWith('curl') && apiCode(stdout) !== 0) failures.push(`${example.where}: \`${example.command}\` answered ${stdout}`)
      continue
    }
    compared++
    const shown = shape(example.output)
    const real = shape(out)
    if (JSON.stringify(shown) !== JSON.stringify(real)) {
      failures.push(`${example.where}: \`${example.command}\`\n  docs show: ${JSON.stringify(shown)}\n  node says: ${JSON.stringify(real)}\n${out}`)
    }
  }
  expect(failures).toEqual([])
  expect(compared).toBeGreaterThanOrEqual(10)
}, 120000)
