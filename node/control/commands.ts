/**
 * The `starling-ctl` command table. Each entry says how a command is typed (words,
 * arguments, options) and how its result is printed; `bin/starling-ctl` turns the table
 * into the command-line parser and sends each command to the node, whose control server
 * runs the handler registered under the same name.
 *
 * Adding a command: write a {@link CtlCommand} (with {@link defineCommand} for a typed
 * `render`), add it to {@link CTL_COMMANDS}, and register a handler of the same name on
 * the node's control server.
 */
import type { ControlOptions } from './protocol.js'
import { formatFields, formatTerm } from './format.js'

/** A positional argument of a command. */
export interface CtlArgument {
  /** Shown in usage as `<name>` (or `[name]` when optional); spec spelling (`RuleId`). */
  name: string
  description: string
  optional?: boolean
  /** Takes the rest of the words; must be last. */
  variadic?: boolean
}

/** An option of a command, in commander's flag syntax (`-d, --descr <descr>`). */
export interface CtlOption {
  flags: string
  description: string
  default?: string | boolean
}

/** What the command was called with, after parsing. */
export interface CtlInvocation {
  args: string[]
  /** Option values by commander's camel-cased name (`--event-type` -> `eventType`). */
  options: ControlOptions
}

/** One `starling-ctl` command. */
export interface CtlCommand<Result = unknown> {
  /** The words the user types: `['status']`, `['plugins', 'load']`. */
  words: string[]
  /** One line for `--help`. */
  description: string
  args?: CtlArgument[]
  options?: CtlOption[]
  /** Name of the node-side handler; defaults to the words joined by spaces. */
  command?: string
  /** How long to wait for the node; default the client's 30 s. */
  timeoutMs?: number
  /**
   * Rewrites the invocation in starling-ctl before it is sent, for what only the caller's side
   * knows: `io.resolve` makes a path absolute against starling-ctl's working directory.
   */
  prepare?: (invocation: CtlInvocation, io: { resolve: (path: string) => string }) => CtlInvocation
  /** Turns the node's result into the text printed without `--json` (ends with `\n`). */
  render (result: Result, invocation: CtlInvocation): string
}

/** Name of the node-side handler of `spec`: its `command`, else its words joined by spaces. */
export function commandName (spec: CtlCommand<any>): string {
  return spec.command ?? spec.words.join(' ')
}

/** `plugins load <Plugin>`: the words and arguments, as `--help` lists them. */
export function commandUsage (spec: CtlCommand<any>): string {
  const args = (spec.args ?? []).map((a) => {
    const name = a.name + (a.variadic === true ? '...' : '')
    return a.optional === true ? `[${name}]` : `<${name}>`
  })
  return [...spec.words, ...args].join(' ')
}

/** Why a request's arguments do not fit its command: which check failed, and the message. */
export interface ArgumentsError {
  /** `missing`: a required argument is absent; `excess`: more than declared; `type`: not a string. */
  kind: 'missing' | 'excess' | 'type'
  message: string
}

/**
 * Checks positional arguments against the command's declared ones: the count (every
 * required argument given, no more than declared unless the last is variadic) and the
 * type (strings). Returns the usage error, worded as `starling-ctl`'s parser (commander)
 * words it, or null when the arguments fit. The node runs it on every request before the
 * handler, so a handler may rely on its required arguments being there.
 */
export function argumentsError (spec: CtlCommand<any>, args: readonly unknown[]): ArgumentsError | null {
  const declared = spec.args ?? []
  const usage = ` (usage: starling-ctl ${commandUsage(spec)})`
  for (let i = args.length; i < declared.length; i++) {
    if (declared[i].optional !== true) return { kind: 'missing', message: `missing required argument '${declared[i].name}'${usage}` }
  }
  const variadic = declared[declared.length - 1]?.variadic === true
  if (!variadic && args.length > declared.length) {
    const optional = declared.some((a) => a.optional === true)
    const expected = `${optional ? 'at most ' : ''}${declared.length} argument${declared.length === 1 ? '' : 's'}`
    return { kind: 'excess', message: `too many arguments for '${commandName(spec)}': expected ${expected} but got ${args.length}${usage}` }
  }
  const wrong = args.findIndex((a) => typeof a !== 'string')
  if (wrong !== -1) {
    const name = declared[Math.min(wrong, declared.length - 1)]?.name ?? String(wrong + 1)
    const type = args[wrong] === null ? 'null' : Array.isArray(args[wrong]) ? 'an array' : typeof args[wrong]
    return { kind: 'type', message: `argument '${name}' must be a string, not ${type}${usage}` }
  }
  return null
}

/** Identity function that types `render` from the result type. */
export function defineCommand<Result> (command: CtlCommand<Result>): CtlCommand<Result> {
  return command
}

/** Result of the node's `status` handler. */
export interface StatusResult {
  /** `node.name`, e.g. `starling@127.0.0.1`. */
  node: string
  /** The node's internal state, as EMQ X reported it: `started`, `starting` or `stopping`. */
  status: string
  /** Broker version, `0.1.0` or `v0.1.0`. */
  version: string
  /** Seconds since the node started. */
  uptime: number
}

/** One entry of the node's `listeners` result: the spec's Listener resource. */
export interface ListenerInfo {
  /** `mqtt:tcp`, `mqtt:ssl`, `mqtt:ws`, `mqtt:wss`, `http:management`, `http:dashboard`. */
  protocol: string
  /** Port or `<ip>:<port>`. */
  listen_on: string | number
  acceptors: number
  max_conns: number
  current_conns: number
  /** `[]` when nothing was shut down, else counters by reason (`{ closed: 2, kicked: 1 }`). */
  shutdown_count: unknown[] | Record<string, number>
}

/**
 * `status`: EMQ X prints `Node 'emqx@127.0.0.1' is started` and `emqx 3.4.0 is running`.
 */
export const statusCommand = defineCommand<StatusResult>({
  words: ['status'],
  description: 'Show whether the node is started and which version runs',
  render (result) {
    const running = result.status === 'started'
      ? `starling ${result.version.replace(/^v/, '')} is running`
      : 'starling is not running'
    return `Node '${result.node}' is ${result.status}\n${running}\n`
  }
})

/**
 * `listeners`: one block per listener, as EMQ X printed them
 * (`listener on mqtt:tcp:0.0.0.0:1883`, then `acceptors`, `max_conns`, `current_conn`,
 * `shutdown_count` indented).
 */
export const listenersCommand = defineCommand<ListenerInfo[]>({
  words: ['listeners'],
  description: 'Show the listeners of the node with their connection counts',
  render (result) {
    return result.map((l) =>
      `listener on ${l.protocol}:${l.listen_on}\n` + formatFields([
        ['acceptors', l.acceptors],
        ['max_conns', l.max_conns],
        ['current_conn', l.current_conns],
        ['shutdown_count', formatTerm(l.shutdown_count)]
      ])
    ).join('')
  }
})

/** Every command `starling-ctl` knows, in the order `--help` lists them. */
export const CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  statusCommand,
  listenersCommand
]
