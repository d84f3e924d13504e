/**
 * `starling-ctl trace ...` and `starling-ctl log ...` (spec: Command-line surface): the
 * command table entries (printed as EMQ X 3 printed them) and the node-side handlers.
 */
import { defineCommand, type CtlCommand } from '../control/commands.js'
import type { ControlServer } from '../control/server.js'
import type { TraceInfo, TraceService, TraceType } from './trace-service.js'

/** `client_id` or `topic`, the word EMQ X prints for a trace's kind. */
function who (type: TraceType): string {
  return type === 'client' ? 'client_id' : 'topic'
}

const FILE_ARG = { name: 'File', description: 'file the trace is appended to (relative to the node\'s working directory)' }
const LEVEL_ARG = { name: 'Level', description: 'least severe line written: debug (default, everything) ... emergency', optional: true }

const started = (info: TraceInfo): string => `trace ${who(info.type)} ${info.target} successfully\n`
const stopped = (info: TraceInfo): string => `stop tracing ${who(info.type)} ${info.target} successfully\n`

/** The `trace` commands, for the ctl table. */
export const TRACE_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  defineCommand<TraceInfo>({
    words: ['trace', 'start', 'client'],
    description: 'Trace every packet and event of a client to a file',
    args: [{ name: 'ClientId', description: 'client id to trace' }, FILE_ARG, LEVEL_ARG],
    render: started
  }),
  defineCommand<TraceInfo>({
    words: ['trace', 'start', 'topic'],
    description: 'Trace every message published on topics matching a filter to a file',
    args: [{ name: 'Topic', description: 'topic filter (+ and # allowed)' }, FILE_ARG, LEVEL_ARG],
    render: started
  }),
  defineCommand<TraceInfo[]>({
    words: ['trace', 'list'],
    description: 'List the running traces',
    render: (traces) => traces.map((t) => `Trace(${who(t.type)}=${t.target}, level=${t.level}, destination=${JSON.stringify(t.file)})\n`).join('')
  }),
  defineCommand<TraceInfo>({
    words: ['trace', 'stop', 'client'],
    description: 'Stop tracing a client',
    args: [{ name: 'ClientId', description: 'client id traced' }],
    render: stopped
  }),
  defineCommand<TraceInfo>({
    words: ['trace', 'stop', 'topic'],
    description: 'Stop tracing a topic filter',
    args: [{ name: 'Topic', description: 'topic filter traced' }],
    render: stopped
  })
]

/** Result of the `log` commands: the level now in force. */
export interface LogLevelResult { level: string }

/** The `log` commands, for the ctl table. */
export const LOG_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  defineCommand<LogLevelResult>({
    words: ['log', 'primary-level'],
    description: 'Show the log level, or set it (debug, info, notice, warning, error, critical, alert, emergency)',
    args: [{ name: 'Level', description: 'new level; omit it to show the current one', optional: true }],
    render: (r) => `${r.level}\n`
  }),
  defineCommand<LogLevelResult>({
    words: ['log', 'set-level'],
    description: 'Set the level of the log and all its handlers',
    args: [{ name: 'Level', description: 'debug, info, notice, warning, error, critical, alert or emergency' }],
    render: (r) => `${r.level}\n`
  })
]

/** Registers the node-side handlers of {@link TRACE_CTL_COMMANDS}; returns their removal. */
export function registerTraceHandlers (control: Pick<ControlServer, 'register' | 'unregister'>, traces: TraceService): () => void {
  const handlers: Record<string, (args: string[]) => unknown> = {
    'trace start client': ([id, file, level]) => traces.startTrace('client', id ?? '', file ?? '', level),
    'trace start topic': ([filter, file, level]) => traces.startTrace('topic', filter ?? '', file ?? '', level),
    'trace list': () => traces.list(),
    'trace stop client': ([id]) => traces.stopTrace('client', id ?? ''),
    'trace stop topic': ([filter]) => traces.stopTrace('topic', filter ?? '')
  }
  for (const [name, fn] of Object.entries(handlers)) control.register(name, (req) => fn(req.args))
  return () => { for (const name of Object.keys(handlers)) control.unregister(name) }
}
