/**
 * `npm run fuzz`: the long fuzzer run against a Starling process it starts, door by door
 * (`--door tcp|connect|sessions|tls|ws|wss|proxy|cluster|api|ctl|all`, default all; 1,000,000 inputs per door by
 * default). Each door gets a fresh node. Prints progress lines, then per door the counts:
 * inputs, connections, connections closed as they had to be, process exits, uncaught
 * errors on the node's stderr, and the witness QoS 1 client's messages sent and received.
 * Exits 1 when any door misses its bar.
 *
 * A door is one entry of `DOORS`: a name, a line of what it sends, and `run`, which gets a
 * fresh node and the options and returns its report lines and whether the bar was met.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Command } from 'commander'
import { runFuzz, passed, type FuzzStats, type MqttDoor } from './fuzz/driver.js'
import { MQTT_DOORS } from './fuzz/doors.js'
import { startFuzzNode } from './fuzz/node-under-test.js'
import type { DoorEntry } from './fuzz/door-entry.js'
import { NODE_DOORS } from './fuzz/node-doors.js'

const benchDir = path.dirname(fileURLToPath(import.meta.url))
/** dist/bench/fuzz.js → repository root. */
const repoRoot = path.resolve(benchDir, '..', '..')

/** An MQTT door (bench/fuzz/doors.ts) as an entry: runFuzz on the node's listener. */
function mqttEntry (door: MqttDoor, summary: string): DoorEntry {
  return {
    name: door.name,
    summary,
    nodeEnv: door.nodeEnv,
    run: async ({ node, inputs, seed, concurrency, strict, progress }) => {
      const stats = await runFuzz({
        door,
        endpoint: { host: '127.0.0.1', port: node.ports[door.listener], path: '/mqtt' },
        inputs,
        seed,
        strict,
        concurrency,
        alive: () => !node.exited(),
        onProgress: (s) => progress(progressLine(s))
      })
      return { lines: report(stats), ok: passed(stats) }
    }
  }
}

/**
 * The doors, in the order `all` runs them. A new door is one entry here.
 */
const DOORS: DoorEntry[] = [
  mqttEntry(MQTT_DOORS.tcp, 'plain TCP: a CONNECT, valid packets, then a protocol error or a blind mutation'),
  mqttEntry(MQTT_DOORS.connect, 'plain TCP: one CONNECT with one field or property wrong (3.1, 3.1.1, 5.0), checked against the standard\'s CONNACK'),
  mqttEntry(MQTT_DOORS.sessions, 'plain TCP: persistent sessions resuming, taking over, leaving messages in flight, errors interleaved'),
  mqttEntry(MQTT_DOORS.tls, 'TLS: the tcp door\'s packets, plus bytes that are not TLS and broken handshakes'),
  mqttEntry(MQTT_DOORS.ws, 'WebSocket: the tcp door\'s packets in split and fragmented binary messages, plus bad frames and handshakes'),
  mqttEntry(MQTT_DOORS.wss, 'WebSocket over TLS: as ws, plus the TLS garbage'),
  mqttEntry(MQTT_DOORS.proxy, 'PROXY protocol on plain TCP: a random v1/v2 header then the tcp door\'s packets, plus no header, broken and cut ones'),
  // the doors past the MQTT listeners: the cluster port, the management API, the control socket
  ...NODE_DOORS
]

function progressLine (s: FuzzStats): string {
  const rate = s.elapsedMs > 0 ? Math.round(s.inputs / (s.elapsedMs / 1000)) : 0
  return `[${s.door}] ${s.inputs} inputs (${rate}/s), ${s.connections} connections, ${s.closedForProtocolError}/${s.protocolErrors} closed as required, ` +
    `${s.accepted} accepted, ${s.blindMutations} blind, ${s.garbage} garbage, ${s.takenOver} taken over, ` +
    `${total(s.closedWithoutReason)} v5 closed without a reason code, witness ${s.witnessReceived}/${s.witnessSent}` +
    (Object.keys(s.unexpected).length > 0 ? `, UNEXPECTED ${JSON.stringify(s.unexpected)}` : '')
}

function total (counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0)
}

function report (s: FuzzStats): string[] {
  return [
    `inputs sent:                      ${s.inputs}`,
    `rate:                             ${Math.round(s.inputs / (s.elapsedMs / 1000))} inputs/s over ${(s.elapsedMs / 1000).toFixed(1)} s`,
    `connections:                      ${s.connections}`,
    `closed as required:               ${s.closedForProtocolError} of ${s.protocolErrors} (left open: ${JSON.stringify(s.leftOpen)})`,
    `closed only after 5 s (busy):     ${JSON.stringify(s.closedSlowly)}`,
    `v5 closed without a reason code:  ${JSON.stringify(s.closedWithoutReason)}`,
    `CONNECTs accepted / refused:      ${s.accepted} / ${s.refused}`,
    `answered against the standard:    ${JSON.stringify(s.unexpected)}`,
    `blind mutations:                  ${s.blindMutations}`,
    `garbage below MQTT:               ${s.garbage}`,
    `taken over (DISCONNECT 0x8E):     ${s.takenOver}`,
    `packets after a DISCONNECT:       ${JSON.stringify(s.afterDisconnect)}`,
    `closed before the script's end:   ${JSON.stringify(s.closedEarly)}`,
    `v5 taken over without 0x8E:       ${JSON.stringify(s.takeoverWithoutReason)}`,
    `witness QoS 1 sent / received:    ${s.witnessSent} / ${s.witnessReceived}` + (s.witnessReconnects > 0 ? ` (subscriber came back ${s.witnessReconnects} times)` : ''),
    `witness stayed connected:         ${s.witnessConnected}`,
    `connections by case:              ${JSON.stringify(s.cases)}`
  ]
}

const program = new Command('fuzz')
  .description('Send fuzzed input through each door of a Starling node and check it survives, closes what it must and loses nothing.')
  .option('--door <name>', `door to run: ${DOORS.map(d => d.name).join(', ')} or all`, 'all')
  .option('--inputs <n>', 'inputs per door (frames and pieces of garbage)', '1000000')
  .option('--packets <n>', 'the same as --inputs (older name)')
  .option('--seed <n>', 'random seed (same seed, same inputs)', '1')
  .option('--concurrency <n>', 'fuzz connections open at once', '32')
  .option('--strict', 'run the node with mqtt.strict_mode = true')
  .addHelpText('after', '\nDoors:\n' + DOORS.map(d => `  ${d.name.padEnd(9)} ${d.summary}`).join('\n'))
  .parse()

const opts = program.opts<{ door: string, inputs: string, packets?: string, seed: string, concurrency: string, strict?: boolean }>()

async function main (): Promise<void> {
  const chosen = opts.door === 'all' ? DOORS : DOORS.filter(d => opts.door.split(',').includes(d.name))
  if (chosen.length === 0) throw new Error(`no door named ${opts.door}: ${DOORS.map(d => d.name).join(', ')} or all`)
  const strict = opts.strict === true
  let allOk = true
  const summary: string[] = []
  for (const door of chosen) {
    const node = await startFuzzNode(repoRoot, { ...(strict ? { STARLING_MQTT__STRICT_MODE: 'true' } : {}), ...door.nodeEnv })
    process.stdout.write(`\n== door ${door.name}: ${door.summary}\n`)
    let exits = 0
    const result = await door.run({
      node,
      inputs: Number(opts.packets ?? opts.inputs),
      seed: Number(opts.seed),
      concurrency: Number(opts.concurrency),
      strict,
      progress: (line) => {
        if (node.exited() && exits === 0) { exits = 1; process.stdout.write(`the node exited:\n${node.output()}\n`) }
        process.stdout.write(line + '\n')
      }
    })
    if (node.exited()) exits = 1
    const uncaught = node.uncaught()
    const output = node.output()
    await node.stop()
    const ok = result.ok && exits === 0 && uncaught === 0
    allOk &&= ok
    const lines = [...result.lines, `process exits:                    ${exits}`, `uncaught errors (stderr):         ${uncaught}`]
    process.stdout.write(`\n[${door.name}] ${ok ? 'PASSED' : 'FAILED'}\n${lines.join('\n')}\n`)
    if (!ok) process.stdout.write(`node output (tail):\n${output}\n`)
    summary.push(`${door.name.padEnd(9)} ${ok ? 'passed' : 'FAILED'}  ${lines[0].replace(/\s+/g, ' ')}`)
  }
  process.stdout.write(`\n${summary.join('\n')}\n`)
  process.exit(allOk ? 0 : 1)
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack ?? err.message : String(err)}\n`)
  process.exit(1)
})
