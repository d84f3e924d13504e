/**
 * The `starling-ctl` program (the spec's `<ctl>`): finds the local node from the same
 * configuration the node reads (`--config`, `STARLING_CONFIG`, `STARLING_*` overrides),
 * sends one command over the node's control socket and writes the result (text, or JSON
 * with `--json`). `bin/starling-ctl` runs it.
 *
 * The commands come from the table in `commands.ts`; this file only turns that table into
 * a commander program.
 */
import { resolve } from 'node:path'
import { Command, CommanderError } from 'commander'
import { loadConfig, resolvePath } from '../config/index.js'
import { packageRoot } from '../version.js'
import { callControl } from './client.js'
import { CTL_COMMANDS, commandName, commandUsage, type CtlCommand, type CtlInvocation } from './commands.js'
import { formatJson } from './format.js'
import { controlSocketPath, type ControlOptions } from './protocol.js'

/** Where `starling-ctl` writes and which environment it reads; defaults to the process's. */
export interface CtlIo {
  env: Record<string, string | undefined>
  cwd: string
  /** Installation root relative paths resolve against (default: Starling's package directory). */
  root?: string
  stdout: { write (text: string): unknown }
  stderr: { write (text: string): unknown }
}

/** Options every command takes, given before or after the command words. */
interface GlobalOptions {
  config?: string
  etcDir?: string
  json?: boolean
}

/**
 * Runs `starling-ctl` with `argv` (the words after the program name) and resolves with the
 * exit code: 0 on success, 1 on any failure (message on stderr), including a node that is
 * not running. Never calls `process.exit`.
 */
export async function runCtl (
  argv: string[],
  io: Partial<CtlIo> = {},
  commands: ReadonlyArray<CtlCommand<any>> = CTL_COMMANDS
): Promise<number> {
  const ctx: CtlIo = {
    env: io.env ?? process.env,
    cwd: io.cwd ?? process.cwd(),
    root: io.root,
    stdout: io.stdout ?? process.stdout,
    stderr: io.stderr ?? process.stderr
  }
  let exitCode = 0
  const program = createProgram(ctx, commands, (code) => { exitCode = code })
  try {
    await program.parseAsync(argv, { from: 'user' })
  } catch (err) {
    // commander has already written its message (usage error) or the help text.
    if (err instanceof CommanderError) return err.exitCode
    ctx.stderr.write(`${(err as Error).message}\n`)
    return 1
  }
  return exitCode
}

/** Builds the commander program for the command table. */
function createProgram (io: CtlIo, commands: ReadonlyArray<CtlCommand<any>>, setExitCode: (code: number) => void): Command {
  const program = new Command('starling-ctl')
    .description("Control a running Starling node (the spec's <ctl>)")
    // Settings made before .command() are inherited by every subcommand.
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text)
    })
    .option('--config <file>', 'configuration file of the node (default: $STARLING_CONFIG, else <etc>/starling.conf)')
    .option('--etc-dir <dir>', 'the node\'s etc directory, as given to bin/starling (default: $STARLING_ETC_DIR, else the installation\'s etc/)')
    .option('--json', 'print the result as JSON')
    .showHelpAfterError('(run starling-ctl --help for usage)')
    .helpCommand(false)

  for (const spec of commands) {
    const cmd = leafCommand(program, spec)
    for (const arg of spec.args ?? []) {
      const name = arg.name + (arg.variadic === true ? '...' : '')
      cmd.argument(arg.optional === true ? `[${name}]` : `<${name}>`, arg.description)
    }
    for (const opt of spec.options ?? []) cmd.option(opt.flags, opt.description, opt.default)
    cmd.action(async (...actionArgs: unknown[]) => {
      const self = actionArgs[actionArgs.length - 1] as Command
      const invocation: CtlInvocation = {
        args: self.processedArgs.flat().filter((a): a is string => typeof a === 'string'),
        options: definedOptions(self.opts())
      }
      try {
        const text = await runCommand(io, spec, invocation, self.optsWithGlobals<GlobalOptions>())
        io.stdout.write(text)
        setExitCode(0)
      } catch (err) {
        io.stderr.write(`${(err as Error).message}\n`)
        setExitCode(1)
      }
    })
  }

  const multiWord = commands.filter((c) => c.words.length > 1)
  if (multiWord.length > 0) {
    const width = Math.max(...multiWord.map((c) => commandUsage(c).length)) + 2
    program.addHelpText('after', '\nAll commands with subcommands:\n' +
      multiWord.map((c) => `  ${commandUsage(c).padEnd(width)}${c.description}`).join('\n'))
  }
  return program
}

/** Finds or creates the nested commander commands for `spec.words`, returning the last. */
function leafCommand (program: Command, spec: CtlCommand<any>): Command {
  let parent = program
  for (const word of spec.words.slice(0, -1)) {
    parent = parent.commands.find((c) => c.name() === word) ??
      parent.command(word).description(`${word} commands (see starling-ctl ${word} --help)`)
  }
  return parent.command(spec.words[spec.words.length - 1]).description(spec.description)
}

/** Loads the node's configuration, sends the command and renders the result. */
async function runCommand (io: CtlIo, spec: CtlCommand<any>, invocation: CtlInvocation, globals: GlobalOptions): Promise<string> {
  // the node's own resolution (bin/starling): relative paths are the installation's
  const cfg = loadConfig({ file: globals.config, etcDir: globals.etcDir, env: io.env, cwd: io.cwd, root: io.root ?? packageRoot() })
  const socketPath = controlSocketPath(resolvePath(cfg, 'node.data_dir'))
  const sent = spec.prepare?.(invocation, { resolve: (path) => resolve(io.cwd, path) }) ?? invocation
  const result = await callControl(socketPath, commandName(spec), sent.args, sent.options, {
    nodeName: cfg['node.name'],
    timeoutMs: spec.timeoutMs
  })
  return globals.json === true ? formatJson(result) : spec.render(result, invocation)
}

/** Drops options the user did not give and that have no default. */
function definedOptions (opts: Record<string, unknown>): ControlOptions {
  const out: ControlOptions = {}
  for (const [key, value] of Object.entries(opts)) {
    if (typeof value === 'string' || typeof value === 'boolean') out[key] = value
  }
  return out
}
