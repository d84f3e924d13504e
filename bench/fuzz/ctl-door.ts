/**
 * The control socket door of the fuzzer (node/control/: newline-delimited JSON requests
 * `{id, command, args, options}` on `<node.data_dir>/starling-ctl.sock`). Each input is one
 * connection carrying a few lines: commands of `starling-ctl`'s table (bin/assemble.ts
 * `ALL_CTL_COMMANDS`) with too few, too many and nasty arguments and options (unknown ones,
 * wrong types, huge, unicode, deep JSON where a command takes JSON), requests of the wrong
 * shape (no id, a string id, args that are not strings ...), unknown commands, lines that are
 * not JSON or not UTF-8, huge lines (past the 16 MiB limit now and then), many requests in one
 * write, and connections half-closed after a partial line or right after the requests.
 *
 * The bar: the node does not exit or log an uncaught error, answers every line that is not
 * empty with exactly one response (`ok: false` with a message for every bad one; `id: null`
 * when the id could not be read), closes a connection whose line is too long after saying so,
 * and keeps serving a QoS 1 witness.
 *
 * Left alone on purpose, so that the node stays one the fuzzer can reach: loaded plugins are
 * never unloaded or reloaded by their real name, the `admin` application is never changed or
 * deleted, log levels are set only to `info` or to a bad value (debug logs of every frame would
 * slow the run to a crawl), trace files go into `traceDir` (or a path that cannot be written),
 * and the witness's client ids are never named.
 */
import net from 'node:net'
import { ALL_CTL_COMMANDS } from '../../bin/assemble.js'
import type { CtlCommand } from '../../node/control/index.js'
import {
  count, deepJson, fail, nastyString, newStats, randomValue, runInputs, sleep, startWitness,
  type DoorOptions, type DoorStats, type Random
} from './door-kit.js'

/** What the control socket door needs of a node. */
export interface CtlDoorOptions extends DoorOptions {
  /** The node's control socket (`<node.data_dir>/starling-ctl.sock`). */
  socketPath: string
  /** Its MQTT/TCP port, for the witness. */
  mqttPort: number
  /** Where `trace start` may write its files (a temporary directory). */
  traceDir: string
  /** Every this many inputs, what the fuzzer created (rules, banned entries, users ...) is deleted (default 5000). */
  cleanEvery?: number
}

/** Longest line the node reads (node/control/protocol.ts MAX_LINE_BYTES). */
const MAX_LINE_BYTES = 16 * 1024 * 1024

const KINDS = ['command', 'command', 'command', 'command', 'bad-shape', 'unknown-command', 'not-json', 'long-line', 'pipelined', 'half-closed'] as const
type Kind = typeof KINDS[number]

/** A line to send and how many responses it must get (0 for a blank line, or one cut short by a half-close). */
interface Line { text: Buffer, answers: number }

/** Runs the control socket door; resolves with the counts once the witness has caught up. */
export async function runCtlDoor (opts: CtlDoorOptions): Promise<DoorStats> {
  const stats = newStats('ctl')
  const tag = `ctl${opts.seed}`
  const plugins = new Set<string>()
  const listed = await request(opts.socketPath, [{ id: 1, command: 'plugins list', args: [], options: {} }])
  for (const p of (listed[0]?.result as Array<{ name: string }> | undefined) ?? []) plugins.add(p.name)
  const witness = await startWitness({ publishPort: opts.mqttPort }, stats, tag)
  const cleanEvery = opts.cleanEvery ?? 5000
  let cleaning: Promise<void> | null = null
  try {
    await runInputs(opts, stats, opts.concurrency ?? 8, async (r, n) => {
      if (n > 0 && n % cleanEvery === 0) await (cleaning ??= cleanUp(opts.socketPath).finally(() => { cleaning = null }))
      const kind = r.pick(KINDS)
      count(stats.byKind, kind)
      await connection(opts, r, kind, stats, plugins)
      return 1
    })
    await witness.finish(opts.alive ?? (() => true))
  } finally {
    witness.close()
  }
  return stats
}

/** One connection: its lines, written in random splits, then every answer awaited and checked. */
async function connection (opts: CtlDoorOptions, r: Random, kind: Kind, stats: DoorStats, plugins: Set<string>): Promise<void> {
  const lines = linesOf(r, kind, opts, plugins)
  const expected = lines.reduce((n, l) => n + l.answers, 0)
  const bytes = Buffer.concat(lines.map(l => l.text))
  const overlong = kind === 'long-line' && lines.some(l => l.text.length > MAX_LINE_BYTES)
  const halfClose = kind === 'half-closed' || r.chance(0.1)
  await new Promise<void>(resolve => {
    const socket = net.connect(opts.socketPath)
    const pieces: string[] = []
    const answers: any[] = []
    let timer: NodeJS.Timeout | undefined
    socket.on('error', () => {})
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      // a long answer comes in many chunks: look for its end in each new chunk only, not in
      // all that was buffered again (that was quadratic in the answer's size)
      let nl = chunk.indexOf('\n')
      if (nl === -1) { pieces.push(chunk); return }
      let line = pieces.join('') + chunk.slice(0, nl)
      pieces.length = 0
      for (;;) {
        try { answers.push(JSON.parse(line)) } catch { fail(stats, 'answer is not JSON', line.slice(0, 300)) }
        const from = nl + 1
        nl = chunk.indexOf('\n', from)
        if (nl === -1) { if (from < chunk.length) pieces.push(chunk.slice(from)); break }
        line = chunk.slice(from, nl)
      }
      if (answers.length >= expected && !overlong) socket.end()
    })
    socket.once('connect', () => {
      void (async () => {
        for (let at = 0; at < bytes.length && !socket.destroyed;) {
          const n = r.chance(0.2) ? 1 + r.int(200) : bytes.length - at
          socket.write(bytes.subarray(at, at + n))
          at += n
          if (r.chance(0.05)) await sleep(1)
        }
        if (halfClose) socket.end()
        else if (expected === 0 && !overlong) setTimeout(() => socket.end(), 50).unref()
      })()
    })
    // the slowest commands (cluster join of an address that never answers) take 15 s
    timer = setTimeout(() => { socket.destroy() }, 20_000)
    socket.once('close', () => {
      clearTimeout(timer)
      timer = undefined
      const what = `${kind}: ${lines.map(l => l.text.subarray(0, 200).toString('utf8')).join(' | ').slice(0, 500)}`
      if (overlong) {
        if (answers.some(a => a?.ok === false && /too long/.test(String(a?.error?.message)))) count(stats.answers, 'line too long: refused and closed')
        else fail(stats, 'overlong line not refused', what)
      } else if (answers.length < expected) {
        fail(stats, halfClose ? 'unanswered after a half-close' : 'unanswered request', `${what} -> ${answers.length} of ${expected} answers`)
      } else if (answers.length > expected) {
        fail(stats, 'more answers than requests', `${what} -> ${JSON.stringify(answers).slice(0, 300)}`)
      }
      for (const a of answers) {
        if (typeof a?.ok !== 'boolean') fail(stats, 'answer is not a response', JSON.stringify(a).slice(0, 300))
        else if (a.ok) count(stats.answers, 'ok')
        else if (typeof a.error?.message !== 'string' || a.error.message === '') fail(stats, 'error without a message', JSON.stringify(a).slice(0, 300))
        else count(stats.answers, a.id === null ? 'error (id null)' : 'error')
        // answered, so within the bar, but the node's own failure shows through (a TypeError's
        // text, a missing argument read as "undefined"): counted apart, with examples
        if (a?.ok === false && /Maximum call stack|Cannot read|is not a function|must be of type|undefined/.test(String(a.error?.message))) {
          count(stats.answers, 'error: an internal failure shows through')
          const list = stats.examples['error: an internal failure shows through'] ??= []
          if (list.length < 8) list.push(`${what.slice(0, 200)} -> ${JSON.stringify(a).slice(0, 300)}`)
        }
      }
      resolve()
    })
  })
}

/** The lines of one input of `kind`. */
function linesOf (r: Random, kind: Kind, opts: CtlDoorOptions, plugins: Set<string>): Line[] {
  const json = (value: unknown): Line => ({ text: Buffer.from(JSON.stringify(value) + '\n'), answers: 1 })
  switch (kind) {
    case 'command': return [json(commandRequest(r, opts, plugins))]
    case 'bad-shape': return [json(r.pick([
      { command: 'status' }, { id: 'x', command: 'status' }, { id: 1 }, { id: 1, command: '' }, { id: 1, command: '   ' },
      { id: 1, command: 7 }, { id: 1, command: 'status', args: 'x' }, { id: 1, command: 'status', args: [1, null] },
      { id: 1, command: 'status', options: [] }, { id: 1, command: 'status', options: { a: { b: 1 } } }, { id: 1, command: 'status', options: null },
      { id: Infinity, command: 'status' }, { id: -0, command: 'status' }, { id: 1e308, command: 'status' }, { id: 1, command: 'status', __proto__: { polluted: true } },
      { id: r.int(10), command: randomValue(r, 2), args: randomValue(r, 2), options: randomValue(r, 2) }, [1, 2], null, 'status', 42
    ]))]
    case 'unknown-command': return [json({ id: r.int(1e6), command: r.pick(['stop', 'shutdown', 'eval', 'rules', 'plugins', 'status now', '__proto__', 'constructor', 'cluster', nastyString(r).slice(0, 500)]), args: [], options: {} })]
    case 'not-json': {
      const text = r.pick([
        r.bytes(1 + r.int(300)).toString('latin1').replace(/\n/g, ''), '{"id":1,"command":"status"', "{'id':1}", 'status', '{"id":1,"command":"status"}}',
        '\ufeff{"id":1,"command":"status"}', '{"id":1,"command":"status",}', deepJson(r, r.pick([100, 10_000, 1_000_000]))
      ])
      const line = Buffer.concat([Buffer.from(text, r.chance(0.5) ? 'latin1' : 'utf8'), Buffer.from('\n')])
      // a line of only whitespace is skipped by the node: no answer
      return [{ text: line, answers: line.toString('utf8').trim() === '' ? 0 : 1 }]
    }
    case 'long-line': {
      // past the limit rarely: 16 MiB per input
      const past = r.chance(0.01)
      const size = past ? MAX_LINE_BYTES + 1 + r.int(1000) : 1 + r.int(r.chance(0.1) ? 2 * 1024 * 1024 : 64 * 1024)
      const text = Buffer.from(JSON.stringify({ id: 1, command: 'status', args: ['x'.repeat(size)], options: {} }) + (past ? '' : '\n'))
      return [{ text, answers: 1 }]
    }
    case 'pipelined': {
      const out: Line[] = []
      for (let n = 2 + r.int(30); n > 0; n--) {
        if (r.chance(0.1)) out.push({ text: Buffer.from(r.pick(['\n', '\r\n', '   \n', '\t\n'])), answers: 0 })
        else out.push(json({ ...commandRequest(r, opts, plugins), id: r.chance(0.2) ? 1 : r.int(1e9) }))
      }
      return out
    }
    case 'half-closed': {
      const whole = json(commandRequest(r, opts, plugins))
      // a line cut short gets no answer: the node never saw its end
      return r.chance(0.5) ? [whole] : [whole, { text: whole.text.subarray(0, r.int(whole.text.length - 1)), answers: 0 }]
    }
  }
}

/** A request of a command of the table, its arguments and options filled, some of them wrong. */
function commandRequest (r: Random, opts: CtlDoorOptions, plugins: Set<string>): { id: number, command: string, args: string[], options: Record<string, string | boolean> } {
  const command: CtlCommand = r.pick(ALL_CTL_COMMANDS)
  const name = command.command ?? command.words.join(' ')
  const specs = command.args ?? []
  let argc = specs.filter(a => a.optional !== true).length
  if (r.chance(0.15)) argc = Math.max(0, argc + r.pick([-2, -1, 1, 2, 5]))
  else if (r.chance(0.3)) argc = specs.length
  const args = Array.from({ length: argc }, (_, i) => argument(r, specs[i]?.name ?? 'Extra', name, opts, plugins))
  const options: Record<string, string | boolean> = {}
  for (const o of command.options ?? []) {
    if (!r.chance(0.5)) continue
    options[camelName(o.flags)] = r.chance(0.1) ? r.chance(0.5) : argument(r, camelName(o.flags), name, opts, plugins)
  }
  if (r.chance(0.1)) options[r.pick(['json', 'force', '__proto__', 'x', 'node'])] = r.chance(0.5) ? true : nastyString(r).slice(0, 200)
  return { id: r.int(1e9), command: r.chance(0.05) ? `  ${name.replace(' ', '   ')} ` : name, args, options }
}

/** `-r, --reason <reason>` → `reason`; `--resource-config <c>` → `resourceConfig` (commander's names). */
function camelName (flags: string): string {
  const long = /--([a-z0-9-]+)/.exec(flags)?.[1] ?? 'x'
  return long.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase())
}

/** A value for argument or option `name` of `command`: a good one, a nasty one, or JSON gone wrong where JSON is taken. */
function argument (r: Random, name: string, command: string, opts: CtlDoorOptions, plugins: Set<string>): string {
  const lower = name.toLowerCase()
  let value: string
  // a trace file is written where it says, relative to the node's working directory: always
  // inside traceDir (or where nothing can be written), never a nasty path taken as it is
  if (lower === 'file') value = r.chance(0.8) ? `${opts.traceDir}/t${r.int(20)}.log` : r.pick(['/proc/nonexistent/x.log', opts.traceDir, `${opts.traceDir}/${'x'.repeat(300)}`, `${opts.traceDir}/${nastyString(r).split('\u0000').join('_').replace(/\//g, '_').slice(0, 200)}`])
  else if (r.chance(0.35)) value = nastyString(r)
  else if (lower === 'level') value = r.pick(['info', 'debugg', 'EMERGENCY', '', '7', 'all'])
  else if (lower === 'as') value = r.pick(['client_id', 'username', 'ip_address', 'clientid', 'peerhost', ''])
  else if (lower === 'qos') value = r.pick(['0', '1', '2', '3', '-1', 'x'])
  else if (lower === 'status' || lower === 'enabled') value = r.pick(['true', 'false', 'yes', '1', ''])
  else if (lower === 'until') value = r.pick([String(Math.floor(Date.now() / 1000) + 3600), '-1', '0', '1e99', 'soon'])
  else if (lower === 'node') value = r.pick(['fz@127.0.0.1:1', 'fz@127.0.0.1', 'nohost', '@', 'a@b@c', 'fz@[::1]:99999'])
  else if (lower === 'sql') value = r.pick(['SELECT * FROM "fz/#"', 'SELECT', 'SELECT * FROM "t" WHERE ' + '('.repeat(r.pick([10, 200])) + '1' + ')'.repeat(200), "SELECT payload.x FROM \"$events/client_connected\""])
  else if (['actions', 'config', 'resourceconfig', 'parseraddr', 'parseropts'].includes(lower)) {
    value = r.pick([JSON.stringify(randomValue(r, 3)) ?? 'null', '[{"name":"do_nothing","params":{}}]', '{"url":"http://127.0.0.1:1/x"}', '{', deepJson(r, r.pick([50, 5000]))])
  } else value = r.pick(['fz', `fz-${r.int(50)}`, 'fz/t', 'web_hook', 'inspect', 'republish', 'starling', 'admin', 'svc_retainer', 'x'.repeat(r.int(100))])
  // protected (see the file's comment)
  if (/plugins (unload|reload|load)/.test(command) && plugins.has(value)) value = `not-${value}`
  if (command.startsWith('mgmt') && value === 'admin') value = 'not-admin'
  return value
}

/** Sends requests on one connection and resolves with their responses. */
async function request (socketPath: string, reqs: unknown[]): Promise<any[]> {
  return await new Promise((resolve, reject) => {
    const socket = net.connect(socketPath)
    let buffered = ''
    const out: any[] = []
    socket.on('error', reject)
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      buffered += chunk
      let nl: number
      while ((nl = buffered.indexOf('\n')) !== -1) { out.push(JSON.parse(buffered.slice(0, nl))); buffered = buffered.slice(nl + 1) }
      if (out.length >= reqs.length) { socket.end(); resolve(out) }
    })
    socket.once('connect', () => { socket.write(reqs.map(q => JSON.stringify(q) + '\n').join('')) })
    setTimeout(() => { socket.destroy(); resolve(out) }, 30_000).unref()
  })
}

/**
 * Deletes what the fuzz created that the node keeps: rules, resources, schemas, banned
 * entries, users, client ids, applications but `admin`, and traces. An operator does not
 * keep thousands of these; left alone they grow every list the fuzz asks for (a `trace list`
 * of 3 MB after 80 000 inputs, each trace an open file) and the run slows down with them.
 */
async function cleanUp (socketPath: string): Promise<void> {
  const groups: Array<[list: string, del: (item: any) => [command: string, args: string[]] | null]> = [
    ['rules list', i => typeof i?.id === 'string' ? ['rules delete', [i.id]] : null],
    ['resources list', i => typeof i?.id === 'string' ? ['resources delete', [i.id]] : null],
    ['schemas list', i => typeof i?.name === 'string' ? ['schemas delete', [i.name]] : null],
    ['banned list', i => typeof i?.who === 'string' ? ['banned del', [String(i.as), i.who]] : null],
    ['users list', i => typeof i?.username === 'string' ? ['users del', [i.username]] : typeof i === 'string' ? ['users del', [i]] : null],
    ['clientid list', i => typeof i?.clientid === 'string' ? ['clientid del', [i.clientid]] : typeof i === 'string' ? ['clientid del', [i]] : null],
    ['mgmt list', i => typeof i?.app_id === 'string' && i.app_id !== 'admin' ? ['mgmt delete', [i.app_id]] : null],
    // TraceInfo (node/trace/trace-service.ts): type `client` or `topic`, target the id or filter
    ['trace list', i => (i?.type === 'client' || i?.type === 'topic') && typeof i?.target === 'string' ? [`trace stop ${String(i.type)}`, [i.target]] : null]
  ]
  for (const [list, del] of groups) {
    const [answer] = await request(socketPath, [{ id: 1, command: list, args: [], options: {} }]).catch(() => [])
    const items: unknown[] = Array.isArray(answer?.result) ? answer.result : []
    const reqs = items.map(del).filter((d): d is [string, string[]] => d !== null).map(([command, args], i) => ({ id: i + 1, command, args, options: {} }))
    for (let i = 0; i < reqs.length; i += 200) await request(socketPath, reqs.slice(i, i + 200)).catch(() => [])
  }
}
