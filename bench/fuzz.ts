/**
 * `npm run fuzz`: the long fuzzer run (default 1,000,000 packets) against a Starling
 * process it starts. Prints progress, then the counts: packets, connections closed for
 * protocol errors, process exits, uncaught exceptions (on the node's stderr), and the
 * witness QoS 1 client's messages sent and received. Exits 1 when any bar is missed.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Command } from 'commander'
import { startBroker, starlingTarget } from './broker-process.js'
import { runFuzz, type FuzzStats } from './fuzz/driver.js'

const benchDir = path.dirname(fileURLToPath(import.meta.url))
/** dist/bench/fuzz.js → repository root. */
const repoRoot = path.resolve(benchDir, '..', '..')

const program = new Command('fuzz')
  .description('Send mutated MQTT packets to a Starling node and check it survives and closes every protocol error.')
  .option('--packets <n>', 'packets to send', '1000000')
  .option('--seed <n>', 'random seed (same seed, same packets)', '1')
  .option('--concurrency <n>', 'fuzz connections open at once', '32')
  .option('--strict', 'run the node with mqtt.strict_mode = true')
  .parse()

const opts = program.opts<{ packets: string, seed: string, concurrency: string, strict?: boolean }>()

function line (s: FuzzStats, exits: number): string {
  const rate = s.elapsedMs > 0 ? Math.round(s.packets / (s.elapsedMs / 1000)) : 0
  return `${s.packets} packets (${rate}/s), ${s.connections} connections, ${s.closedForProtocolError}/${s.protocolErrors} protocol errors closed, ` +
    `${s.blindMutations} blind mutations, exits ${exits}, witness ${s.witnessReceived}/${s.witnessSent}`
}

async function main (): Promise<void> {
  const target = starlingTarget(repoRoot)
  const base = target.command
  if (opts.strict === true) target.command = (port, dir) => { const c = base(port, dir); c.env.STARLING_MQTT__STRICT_MODE = 'true'; return c }
  const broker = await startBroker(target, 4096, repoRoot)
  let exits = 0
  const stats = await runFuzz({
    port: broker.port,
    packets: Number(opts.packets),
    seed: Number(opts.seed),
    concurrency: Number(opts.concurrency),
    alive: () => {
      if (broker.exited() && exits === 0) {
        exits = 1
        process.stdout.write(`the node exited:\n${broker.output()}\n`)
      }
      return exits === 0
    },
    onProgress: (s) => process.stdout.write(line(s, exits) + '\n')
  })
  const output = broker.output()
  const uncaught = (output.match(/Uncaught|uncaughtException|unhandledRejection|^\s*at .+\(.+:\d+:\d+\)$/gm) ?? []).length
  if (broker.exited()) exits = 1
  await broker.stop()
  const left = Object.values(stats.leftOpen).reduce((a, b) => a + b, 0)
  process.stdout.write([
    '',
    `packets sent:                     ${stats.packets}`,
    `rate:                             ${Math.round(stats.packets / (stats.elapsedMs / 1000))} packets/s over ${(stats.elapsedMs / 1000).toFixed(1)} s`,
    `connections:                      ${stats.connections}`,
    `closed for protocol errors:       ${stats.closedForProtocolError} of ${stats.protocolErrors} (left open: ${JSON.stringify(stats.leftOpen)})`,
    `closed only after 5 s (busy):     ${JSON.stringify(stats.closedSlowly)}`,
    `v5 closed without a reason code:  ${JSON.stringify(stats.closedWithoutReason)}`,
    `blind mutations:                  ${stats.blindMutations}`,
    `process exits:                    ${exits}`,
    `uncaught exceptions (stderr):     ${uncaught}`,
    `witness QoS 1 sent / received:    ${stats.witnessSent} / ${stats.witnessReceived}`,
    `witness stayed connected:         ${stats.witnessConnected}`,
    ''
  ].join('\n'))
  const ok = exits === 0 && uncaught === 0 && left === 0 && stats.witnessReceived === stats.witnessSent && stats.witnessConnected
  if (!ok) process.stdout.write(`FAILED\n${output}\n`)
  process.exit(ok ? 0 : 1)
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack ?? err.message : String(err)}\n`)
  process.exit(1)
})
