import { runCtl } from '../../node/control/ctl-program.js'
import type { CtlCommand } from '../../node/control/index.js'
import { ALL_CTL_COMMANDS } from '../../bin/assemble.js'

/** What a `starling-ctl` run printed and its exit code. */
export interface CtlResult { code: number, out: string, err: string }

/**
 * Runs `starling-ctl argv` in-process against `node` (found, as the real tool does, through
 * `STARLING_NODE__DATA_DIR`), capturing its output. `commands` defaults to every command.
 */
export async function runCtlOn (node: { dataDir: string }, argv: string[], opts: {
  cwd?: string
  commands?: ReadonlyArray<CtlCommand<any>>
  env?: Record<string, string>
} = {}): Promise<CtlResult> {
  let out = ''
  let err = ''
  const code = await runCtl(argv, {
    env: { STARLING_NODE__DATA_DIR: node.dataDir, ...opts.env },
    cwd: opts.cwd ?? process.cwd(),
    stdout: { write: (s: string) => { out += s } },
    stderr: { write: (s: string) => { err += s } }
  }, opts.commands ?? ALL_CTL_COMMANDS)
  return { code, out, err }
}
