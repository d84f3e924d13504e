/**
 * The reference codec service as a child process, for tests: a service outside the node's
 * process, as users run it (bin/starling-codec).
 *
 * The service's TypeScript sources are transpiled once per test file into a temporary
 * directory (they import only Node's modules) and run with `node`, as `bin/starling-codec`
 * runs the built ones.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const SOURCES = ['codec-wire', 'codec-server', 'codec-server-main']
const SOURCE_DIR = fileURLToPath(new URL('../../rules/schemas/', import.meta.url))

let built: string | undefined

/** The transpiled service (once per test file); removed by {@link removeCodecBuild}. */
function build (): string {
  if (built !== undefined) return built
  const dir = mkdtempSync(join(tmpdir(), 'starling-codec-'))
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}')
  for (const name of SOURCES) {
    const source = readFileSync(join(SOURCE_DIR, `${name}.ts`), 'utf8')
    const out = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } })
    writeFileSync(join(dir, `${name}.js`), out.outputText)
  }
  return (built = dir)
}

/** Deletes the transpiled files (call in `afterAll`). */
export function removeCodecBuild (): void {
  if (built !== undefined) rmSync(built, { recursive: true, force: true })
  built = undefined
}

/** A running reference codec service. */
export interface CodecProcess {
  /** `http://127.0.0.1:<port>/codec`. */
  httpUrl: string
  /** `127.0.0.1:<port>`. */
  tcpAddress: string
  /** Stops it (SIGTERM) and waits for the exit. */
  stop: () => Promise<void>
}

/**
 * Starts the service on `http` and `tcp` (`[<host>:]<port>`, default port 0 for both) and
 * resolves once both listen, with their addresses.
 */
export async function startCodecProcess (opts: { http?: string, tcp?: string } = {}): Promise<CodecProcess> {
  const main = join(build(), 'codec-server-main.js')
  const args = ['--http', opts.http ?? '127.0.0.1:0', '--tcp', opts.tcp ?? '127.0.0.1:0']
  const child: ChildProcess = spawn(process.execPath, ['--input-type=module', '-e', `import(${JSON.stringify(main)}).then(m => m.main(${JSON.stringify(args)}))`], {
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const exited = new Promise<void>(resolve => child.once('exit', () => resolve()))
  let out = ''
  let err = ''
  child.stderr!.on('data', (chunk: Buffer) => { err += chunk.toString() })
  const addresses = await new Promise<{ httpUrl: string, tcpAddress: string }>((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`the codec service did not start: ${err}`)) }, 10_000)
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`the codec service exited with ${String(code)}: ${err}`)) })
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const http = /HTTP codec service at (\S+)/.exec(out)
      const tcp = /TCP codec service at (\S+)/.exec(out)
      if (http !== null && tcp !== null) {
        clearTimeout(timer)
        resolve({ httpUrl: http[1], tcpAddress: tcp[1] })
      }
    })
  })
  return {
    ...addresses,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await exited
    }
  }
}
