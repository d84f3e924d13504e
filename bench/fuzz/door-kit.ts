/**
 * What the fuzzer's doors besides the MQTT listener share (bench/fuzz/{cluster,api,ctl}-door.ts):
 * the options and counts every door takes and returns (the shape of driver.ts `runFuzz`), the
 * QoS 1 witness that must lose nothing while a door is fuzzed, the loop that runs a door's
 * inputs with a bounded concurrency, and a mutator of JSON-like values (wrong types, missing
 * and extra fields, huge strings, deep nesting, unicode, numbers out of range, null).
 */
import mqtt, { type MqttClient } from 'mqtt'
import { Random } from './packets.js'

export { Random }

/** What every door is run with (as driver.ts `FuzzOptions`, with `inputs` for `packets`). */
export interface DoorOptions {
  /** Inputs to send in all (an input is one connection, request, stream or frame batch: each door says). */
  inputs: number
  seed: number
  /** Inputs in flight at once (each door has its default). */
  concurrency?: number
  /** Called every `progressMs` (default 2000) with the counts so far. */
  onProgress?: (stats: DoorStats) => void
  progressMs?: number
  /** Stops early (and the run fails) when this returns false, e.g. the node process exited. */
  alive?: () => boolean
  /** Sends no new input after this time (ms since the epoch): a long run bounded by the clock, not a failure. */
  stopAt?: number
}

/** The counts every door returns; `byKind` says how many inputs of each kind were sent. */
export interface DoorStats {
  door: string
  inputs: number
  /** Inputs by kind (`garbage-tcp`, `link-frame`, `bad-json` ...). */
  byKind: Record<string, number>
  /** What came back, by kind of answer (`closed`, `4xx`, `error answer` ...). */
  answers: Record<string, number>
  /** Answers that break the door's bar (a 5xx, a command left unanswered ...), by kind: each is a finding. */
  failures: Record<string, number>
  /** A few examples of each failure (input and answer), for the report. */
  examples: Record<string, string[]>
  witnessSent: number
  witnessReceived: number
  /** The witness's clients stayed connected to the end. */
  witnessConnected: boolean
  /** The messages the witness lost, as runs of sequence numbers with when they were published (empty when none). */
  witnessMissing: string[]
  elapsedMs: number
}

/** Fresh counts for `door`. */
export function newStats (door: string): DoorStats {
  return { door, inputs: 0, byKind: {}, answers: {}, failures: {}, examples: {}, witnessSent: 0, witnessReceived: 0, witnessConnected: true, witnessMissing: [], elapsedMs: 0 }
}

/** Adds one to `into[key]`. */
export function count (into: Record<string, number>, key: string): void {
  into[key] = (into[key] ?? 0) + 1
}

/** Counts a failure and keeps its first examples. */
export function fail (stats: DoorStats, kind: string, example: string): void {
  count(stats.failures, kind)
  const list = stats.examples[kind] ?? (stats.examples[kind] = [])
  if (list.length < 5) list.push(example.length > 600 ? example.slice(0, 600) + '...' : example)
}

/** Resolves after `ms`; the timer does not keep the process alive. */
export function sleep (ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms).unref())
}

/**
 * Runs `one(r, n)` for n = 0 .. `opts.inputs - 1` (each with its own seeded Random, so a seed
 * replays the same inputs), `concurrency` at a time, while `alive()`; reports progress.
 * `one` returns how many inputs it sent (a batch may count several).
 */
export async function runInputs (opts: DoorOptions, stats: DoorStats, concurrency: number, one: (r: Random, n: number) => Promise<number>): Promise<void> {
  const started = Date.now()
  const timer = setInterval(() => { stats.elapsedMs = Date.now() - started; opts.onProgress?.(stats) }, opts.progressMs ?? 2000)
  const alive = opts.alive ?? (() => true)
  let next = 0
  const worker = async (): Promise<void> => {
    while (stats.inputs < opts.inputs && alive() && Date.now() < (opts.stopAt ?? Infinity)) {
      const n = next++
      // awaited first: `stats.inputs += await ...` would add to the value read before the wait
      const sent = await one(new Random(opts.seed * 1_000_003 + n), n)
      stats.inputs += sent
    }
  }
  try {
    await Promise.all(Array.from({ length: concurrency }, worker))
  } finally {
    clearInterval(timer)
    stats.elapsedMs = Date.now() - started
  }
}

/** Where the witness publishes and where it subscribes (another node's MQTT port for a cluster). */
export interface WitnessTarget { publishPort: number, subscribePort?: number }

/** A running witness: {@link Witness.finish} stops publishing and waits for the last messages. */
export interface Witness {
  finish: (alive: () => boolean) => Promise<void>
  close: () => void
}

/**
 * The well-behaved pair: a v5 QoS 1 subscriber and a 3.1.1 QoS 1 publisher (on another node
 * when `subscribePort` is given: every message then crosses the cluster link), one message at
 * a time on a topic of its own. Every message whose PUBACK came must arrive.
 */
export async function startWitness (target: WitnessTarget, stats: DoorStats, tag: string): Promise<Witness> {
  const opts = { host: '127.0.0.1', reconnectPeriod: 0, connectTimeout: 10_000, keepalive: 60 }
  const sub = mqtt.connect({ ...opts, port: target.subscribePort ?? target.publishPort, protocolVersion: 5, clientId: `witness-sub-${tag}` })
  const pub = mqtt.connect({ ...opts, port: target.publishPort, protocolVersion: 4, clientId: `witness-pub-${tag}` })
  for (const c of [sub, pub]) c.on('error', () => {})
  await Promise.all([sub, pub].map(async c => await connected(c)))
  const topic = `witness-${tag}`
  const seen = new Set<string>()
  sub.on('message', (_topic, payload) => { seen.add(payload.toString()); stats.witnessReceived = seen.size })
  await sub.subscribeAsync(`${topic}/#`, { qos: 1 })
  if (target.subscribePort !== undefined && target.subscribePort !== target.publishPort) {
    // the route must reach the publishing node before the first message counts
    const probe = `${topic}/probe`
    const deadline = Date.now() + 10_000
    let got = false
    sub.on('message', (t) => { if (t === probe) got = true })
    while (!got && Date.now() < deadline) { await pub.publishAsync(probe, 'probe', { qos: 1 }); await sleep(100) }
    if (!got) throw new Error('the witness subscriber on the other node never got a message: the cluster is not linked')
    seen.clear()
    stats.witnessReceived = 0
  }
  let running = true
  // when each message was acknowledged (ms since the epoch): the report places a loss in time
  const ackedAt: number[] = []
  const loop = (async () => {
    let n = 0
    while (running && pub.connected) {
      await pub.publishAsync(`${topic}/${n % 10}`, String(n), { qos: 1 })
      ackedAt.push(Date.now())
      stats.witnessSent = ++n
      await sleep(5)
    }
  })()
  return {
    finish: async (alive) => {
      running = false
      // a publish to a node that went away never settles
      await Promise.race([loop.catch(() => {}), sleep(5000)])
      stats.witnessConnected = sub.connected && pub.connected
      const deadline = Date.now() + 10_000
      while (stats.witnessReceived < stats.witnessSent && Date.now() < deadline && alive()) await sleep(20)
      stats.witnessMissing = missingRuns(ackedAt, seen)
    },
    close: () => { running = false; sub.end(true); pub.end(true) }
  }
}

/**
 * The runs of sequence numbers acknowledged and never received, each as `first-last (n) at
 * <time of the first>`, at most 50: a loss in bursts shows when each burst happened, to be
 * found in the node's log (bench/fuzz/node-under-test.ts, `FUZZ_NODE_LOG`).
 */
function missingRuns (ackedAt: number[], seen: Set<string>): string[] {
  const runs: string[] = []
  for (let i = 0; i < ackedAt.length && runs.length < 50; i++) {
    if (seen.has(String(i))) continue
    let j = i
    while (j + 1 < ackedAt.length && !seen.has(String(j + 1))) j++
    runs.push(`${i}-${j} (${j - i + 1}) at ${new Date(ackedAt[i]).toISOString()}`)
    i = j
  }
  return runs
}

async function connected (c: MqttClient): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    c.once('connect', () => resolve())
    c.once('close', () => reject(new Error('witness could not connect')))
  })
}

/** Strings a handler may choke on: empty, huge, control and unicode characters, path and SQL tricks. */
export function nastyString (r: Random): string {
  switch (r.int(14)) {
    case 0: return ''
    case 1: return 'x'.repeat(1 + r.int(70_000))
    case 2: return '\u0000' + r.bytes(1 + r.int(16)).toString('latin1')
    case 3: return '../../../../etc/passwd'
    case 4: return "' OR 1=1 --"
    case 5: return '%00%ff%2e%2e%2f'
    case 6: return '\ud800'
    case 7: return '🙂'.repeat(1 + r.int(200))
    case 8: return 'ﾟ･✿ヾ╲(｡◕‿◕｡)╱✿･ﾟ\u202e\u200b'
    case 9: return '#/+/$SYS/#'
    case 10: return String(r.int(1e9))
    case 11: return '  spaces  \t\n'
    case 12: return '${' + 'x'.repeat(r.int(20)) + '}'
    default: return r.bytes(1 + r.int(40)).toString('base64')
  }
}

/** Numbers at and past every edge: negative, zero, huge, fractions, NaN-likes are strings. */
export function nastyNumber (r: Random): number {
  return r.pick([-1, 0, 1, 2, 3, 255, 256, 65535, 65536, 2 ** 31, 2 ** 32, 2 ** 53 + 2, -(2 ** 63), 1e308, -1e308, 0.5, -0.0001, Number.MAX_SAFE_INTEGER, r.int(1e6)])
}

/** `depth` nested arrays or objects around `inner`. */
export function deepNest (r: Random, depth: number, inner: unknown = 1): unknown {
  let v: unknown = inner
  const asArray = r.chance(0.5)
  for (let i = 0; i < depth; i++) v = asArray ? [v] : { a: v }
  return v
}

/**
 * JSON text nested `depth` levels (up to far past what JSON.stringify of a value could
 * write), with `inner` (JSON text) in the middle.
 */
export function deepJson (r: Random, depth: number, inner = '1'): string {
  return r.chance(0.5) ? '['.repeat(depth) + inner + ']'.repeat(depth) : '{"a":'.repeat(depth) + inner + '}'.repeat(depth)
}

/** A random JSON value of any type, `depth` levels at most. */
export function randomValue (r: Random, depth = 2): unknown {
  switch (r.int(depth > 0 ? 9 : 6)) {
    case 0: return null
    case 1: return r.chance(0.5)
    case 2: return nastyNumber(r)
    case 3: case 4: return nastyString(r)
    case 5: return r.int(10)
    case 6: return Array.from({ length: r.int(5) }, () => randomValue(r, depth - 1))
    case 7: return Object.fromEntries(Array.from({ length: r.int(5) }, () => [nastyKey(r), randomValue(r, depth - 1)]))
    default: return deepNest(r, 10 + r.int(r.chance(0.1) ? 1000 : 200))
  }
}

/** A key name: ordinary, empty, prototype-polluting or odd. */
export function nastyKey (r: Random): string {
  return r.pick(['', 'x', '__proto__', 'constructor', 'prototype', 'toString', 'a.b', 'a/b', '$ref', '0', ' ', 'name', 'id', 'type', nastyString(r).slice(0, 64)])
}

/**
 * A value of `schema` (the JSON schema subset the route table uses), valid-looking or mutated:
 * most fields are filled to type so that the mutation reaches past the first check.
 */
export function fromSchema (r: Random, schema: Record<string, any> | undefined, depth = 0, mutate = 0.3): unknown {
  if (schema === undefined || depth > 6) return randomValue(r, 1)
  if (r.chance(mutate / (depth + 1))) return randomValue(r, 2)
  if (Array.isArray(schema.enum) && r.chance(0.8)) return r.pick(schema.enum)
  const type = Array.isArray(schema.type) ? r.pick(schema.type as string[]) : schema.type as string | undefined
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {}
      const props = (schema.properties ?? {}) as Record<string, Record<string, any>>
      const required = new Set<string>(schema.required ?? [])
      for (const [key, sub] of Object.entries(props)) {
        // a required field is left out now and then; an optional one half the time
        if (required.has(key) ? r.chance(0.93) : r.chance(0.5)) out[key] = fromSchema(r, sub, depth + 1, mutate)
      }
      if (schema.additionalProperties !== undefined && schema.additionalProperties !== false) {
        for (let i = r.int(3); i >= 0; i--) out[nastyKey(r)] = fromSchema(r, schema.additionalProperties === true ? undefined : schema.additionalProperties, depth + 1, mutate)
      }
      if (r.chance(0.15)) out[nastyKey(r)] = randomValue(r, 1)
      return out
    }
    case 'array': return Array.from({ length: r.chance(0.05) ? 500 + r.int(3000) : r.int(4) }, () => fromSchema(r, schema.items, depth + 1, mutate))
    case 'string': return r.chance(0.6) ? r.pick(['x', 'test', 'a/b', 'SELECT * FROM "t/#"', 'client_id', 'web_hook', 'true', '1', 'info']) : nastyString(r)
    case 'integer': case 'number': return r.chance(0.5) ? r.int(3) : nastyNumber(r)
    case 'boolean': return r.chance(0.5)
    default: return randomValue(r, 1)
  }
}
