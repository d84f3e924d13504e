/**
 * `starling-ctl`: the spec's `<ctl>`, the control tool of a local Starling node.
 * The program itself is `runCtl` in `node/control/ctl-program.ts`; the `bin/starling-ctl`
 * launcher imports this module and runs it.
 */
import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { runCtl as runCtlProgram, type CtlIo } from '../node/control/ctl-program.js'
import { ALL_CTL_COMMANDS } from './ctl-commands.js'

export type { CtlIo }

/** Runs `starling-ctl` with every subsystem's commands; returns the exit code. */
export function runCtl (argv: string[], io: Partial<CtlIo> = {}): Promise<number> {
  return runCtlProgram(argv, io, ALL_CTL_COMMANDS)
}

/** Whether this module is the program being run (`node dist/bin/starling-ctl.js`). */
function isMain (): boolean {
  if (process.argv[1] === undefined) return false
  try {
    return realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))
  } catch {
    return false
  }
}

if (isMain()) process.exitCode = await runCtl(process.argv.slice(2))
