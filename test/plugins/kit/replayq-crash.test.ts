/**
 * The replay queue under a real SIGKILL: a child process (fixtures/replayq-writer.ts,
 * transpiled with the replay queue's sources to a temporary directory, as store.test.ts
 * does) appends and acknowledges while the test kills it mid-stream, twice; the queue
 * reopened here must hold every item the child was told was durable and did not
 * acknowledge, in order, none twice.
 */
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { openReplayQueue } from '../../../plugins/kit/replayq/replayq.js'

const projectRoot = fileURLToPath(new URL('../../../', import.meta.url))

describe('replay queue killed with SIGKILL', () => {
  let work: string
  let dir: string

  beforeEach(async () => {
    work = await mkdtemp(join(tmpdir(), 'starling-replayq-crash-'))
    dir = join(work, 'queue')
  })
  afterEach(async () => {
    await rm(work, { recursive: true, force: true })
  })

  it('keeps every item it reported durable and not acknowledged, in order, across two kills', async () => {
    const script = await transpileChild(join(work, 'child'))
    const durable = new Set<number>()
    const acked = new Set<number>()
    for (const start of [0, 1_000_000]) {
      const { lines, signal } = await runUntilKilled(script, dir, start, 1500)
      expect(signal).toBe('SIGKILL')
      for (const line of lines) {
        const [kind, a, b] = line.split(' ')
        const target = kind === 'durable' ? durable : kind === 'acked' ? acked : undefined
        if (target === undefined) continue
        for (let n = Number(a); n <= Number(b); n++) target.add(n)
      }
    }
    expect(durable.size).toBeGreaterThan(1000)

    const queue = await openReplayQueue<Buffer>({ dir, segBytes: 16 * 1024 })
    const restored: number[] = []
    for (;;) {
      const { items, ackRef } = queue.pop(1000, Infinity)
      if (items.length === 0) break
      for (const item of items) restored.push(Number(item.toString().slice('item-'.length)))
      queue.ack(ackRef)
    }
    await queue.close()

    for (let i = 1; i < restored.length; i++) expect(restored[i]).toBeGreaterThan(restored[i - 1]!)
    const have = new Set(restored)
    const missing = [...durable].filter((n) => !acked.has(n) && !have.has(n))
    if (missing.length > 0) console.log({ restored: restored.length, first: restored.slice(0, 5), last: restored.slice(-5), durable: durable.size, acked: acked.size, missingCount: missing.length, missingFirst: missing.slice(0, 10), missingLast: missing.slice(-3) })
    expect(missing).toEqual([])
  }, 60_000)
})

/** Transpiles plugins/kit/replayq/replayq*.ts and the fixture to `out`, keeping the repository's layout. */
async function transpileChild (out: string): Promise<string> {
  const sources = (await readdir(join(projectRoot, 'plugins/kit/replayq'))).filter((f) => /^replayq.*\.ts$/.test(f)).map((f) => `plugins/kit/replayq/${f}`)
  sources.push('test/plugins/kit/fixtures/replayq-writer.ts')
  for (const source of sources) {
    const { outputText } = ts.transpileModule(await readFile(join(projectRoot, source), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 }
    })
    const target = join(out, source.replace(/\.ts$/, '.js'))
    await mkdir(dirname(target), { recursive: true })
    await writeFile(target, outputText)
  }
  await writeFile(join(out, 'package.json'), '{"type":"module"}')
  return join(out, 'test/plugins/kit/fixtures/replayq-writer.js')
}

/** Runs the child until it has reported `durableLines` durable appends, then SIGKILLs it. */
function runUntilKilled (script: string, dir: string, start: number, durableLines: number): Promise<{ lines: string[], signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, dir, String(start)], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } })
    let out = ''
    let err = ''
    let durable = 0
    let killed = false
    const timer = setTimeout(() => { child.kill('SIGKILL') }, 20_000)
    child.stdout.on('data', (chunk: Buffer) => {
      const text = chunk.toString()
      out += text
      durable += text.split('durable ').length - 1
      if (!killed && durable >= durableLines) {
        killed = true
        child.kill('SIGKILL')
      }
    })
    child.stderr.on('data', (chunk: Buffer) => { err += chunk.toString() })
    child.on('error', reject)
    // 'close', not 'exit': every line written before the kill has been read by then
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (!killed) reject(new Error(`the child ended by itself (${String(code)}, ${String(signal)}): ${err}`))
      // only whole lines: the last one may be cut short by the kill
      else resolve({ lines: out.split('\n').slice(0, -1), signal })
    })
  })
}
