/**
 * One steady-stream run of the cluster bench: subscribers on one broker port, publishers
 * on another (or the same), each side driven by its own {@link LoadGenerator}, and the CPU
 * time of the given broker processes read at the two edges of the measured window.
 */
import { readFileSync } from 'node:fs'
import os from 'node:os'
import { LoadGenerator, type LoadCounters } from './load-generator.js'
import { clockTicksPerSecond, readProcessTree } from './proc-stats.js'
import { ProbeClient } from './cluster-probe.js'

/** Where the stream runs and what is measured. */
export interface FlowPlan {
  /** `local` (publisher and subscriber on A), `forwarded` (A to B), `mosquitto` (the reference). */
  kind: 'local' | 'forwarded' | 'mosquitto'
  qos: 0 | 1
  round: number
  /** MQTT port of the publishers' broker and of the subscriber's. */
  pubPort: number
  subPort: number
  /** Broker processes whose CPU is counted, by label (`A`, `B`, `mosquitto`). */
  pids: Record<string, number>
  /** Total publish rate, msg/s, spread over `publishers`. */
  rate: number
  publishers: number
  payloadSize: number
  warmupS: number
  durationS: number
  /** How long the subscriber may take to drain after the publishers stop, ms (default 3000). */
  drainMaxMs?: number
  /** The subscriber has drained when nothing arrived for this long, ms (default 300). */
  drainQuietMs?: number
}

/** What one run measured; rates are per second of the window. */
export interface FlowResult {
  kind: FlowPlan['kind']
  qos: 0 | 1
  round: number
  sentPerS: number
  deliveredPerS: number
  /** CPU µs per delivered message, per counted process. */
  cpuUsPerMsgBy: Record<string, number>
  /** Sum over the counted processes. */
  cpuUsPerMsg: number
  /** CPU % of one core, per counted process. */
  cpuPercentBy: Record<string, number>
  /** Of `cpuUsPerMsgBy`, the part spent in the kernel (stime), per counted process. */
  sysUsPerMsgBy: Record<string, number>
  /** read + write system calls per delivered message, per counted process (NaN where /proc/<pid>/io is unreadable). */
  syscallsPerMsgBy: Record<string, number>
  p50Ms: number | null
  p99Ms: number | null
  /** CPU of this bench process over the window, % of one core. */
  generatorCpuPercent: number
  /** 1-minute load average at the start of the window. */
  load: number
  /** Over the whole stream (warm-up and window), after the subscriber drained: messages published and received. */
  sentTotal: number
  receivedTotal: number
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Publishes to `topic` on `port` every 20 ms until the subscriber generator has received
 * something: the subscriber's route has reached the publishing node.
 */
async function waitForRoute (port: number, topic: string, subscribers: LoadGenerator, timeoutMs = 20_000): Promise<void> {
  const probe = await ProbeClient.open(port, `bench-route-probe-${process.pid}`)
  const before = subscribers.read().received
  const deadline = Date.now() + timeoutMs
  try {
    while (subscribers.read().received === before) {
      if (Date.now() > deadline) throw new Error(`no message on ${topic} reached the subscriber within ${timeoutMs} ms`)
      probe.publish(topic, Buffer.alloc(8))
      await sleep(20)
    }
  } finally {
    await probe.close()
  }
}

/**
 * read + write system calls the process has made (`syscr` + `syscw` of proc(5)'s
 * /proc/<pid>/io; on loopback a socket write also pays for the receiver's TCP input), or
 * NaN when the file cannot be read.
 */
function syscalls (pid: number): number {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8')
    const field = (name: string): number => Number(new RegExp(`^${name}: (\\d+)`, 'm').exec(io)?.[1] ?? NaN)
    return field('syscr') + field('syscw')
  } catch {
    return NaN
  }
}

/** System (kernel) CPU time of one process in clock ticks (`stime`, field 15 of /proc/<pid>/stat), or NaN. */
function systemTicks (pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // fields restart after the last ')' (comm may hold spaces); [0] is field 3
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[12])
  } catch {
    return NaN
  }
}

interface Snapshot {
  at: number
  ticks: Record<string, number>
  sysTicks: Record<string, number>
  calls: Record<string, number>
  sub: LoadCounters
  pub: LoadCounters
  self: NodeJS.CpuUsage
}

function snapshot (pids: Record<string, number>, sub: LoadGenerator, pub: LoadGenerator): Snapshot {
  const ticks: Record<string, number> = {}
  const sysTicks: Record<string, number> = {}
  const calls: Record<string, number> = {}
  for (const [label, pid] of Object.entries(pids)) {
    ticks[label] = readProcessTree(pid).cpuTicks
    sysTicks[label] = systemTicks(pid)
    calls[label] = syscalls(pid)
  }
  return { at: performance.now(), ticks, sysTicks, calls, sub: sub.read(), pub: pub.read(), self: process.cpuUsage() }
}

/** Runs one steady stream and returns what its window measured. */
export async function runFlow (plan: FlowPlan): Promise<FlowResult> {
  const prefix = `bench/${plan.kind}-q${plan.qos}-r${plan.round}`
  const id = `bench-${plan.kind}-q${plan.qos}-r${plan.round}-${process.pid}`
  const common = { host: '127.0.0.1', workers: 1, keepalive: 300, connectBatch: 50, idle: 0 }
  const publisher = {
    topic: `${prefix}/{i}`,
    qos: plan.qos,
    rate: plan.rate / plan.publishers,
    tickMs: 10,
    inflightWindow: 1000,
    payloadSize: plan.payloadSize
  }
  const subscriber = { filter: `${prefix}/#`, qos: plan.qos }
  const subs = new LoadGenerator({ ...common, port: plan.subPort, clientIdPrefix: `${id}-s`, publishers: 0, publisher, subscribers: 1, subscriber })
  const pubs = new LoadGenerator({ ...common, port: plan.pubPort, clientIdPrefix: `${id}-p`, publishers: plan.publishers, publisher, subscribers: 0, subscriber })
  try {
    await subs.setup()
    await waitForRoute(plan.pubPort, `${prefix}/probe`, subs)
    await pubs.setup()
    await pubs.start()
    await sleep(plan.warmupS * 1000)
    const load = os.loadavg()[0]
    const a = snapshot(plan.pids, subs, pubs)
    subs.setRecording(true)
    await sleep(plan.durationS * 1000)
    const b = snapshot(plan.pids, subs, pubs)
    subs.setRecording(false)
    await pubs.stop()
    await subs.drain(plan.drainQuietMs ?? 300, plan.drainMaxMs ?? 3000)
    const totals = { sent: pubs.read().sent, received: subs.read().received }
    const histogram = await subs.histogram()
    const windowS = (b.at - a.at) / 1000
    const delivered = b.sub.received - a.sub.received
    const usPerTick = 1e6 / clockTicksPerSecond()
    const cpuUsPerMsgBy: Record<string, number> = {}
    const cpuPercentBy: Record<string, number> = {}
    const sysUsPerMsgBy: Record<string, number> = {}
    const syscallsPerMsgBy: Record<string, number> = {}
    let cpuUs = 0
    for (const label of Object.keys(plan.pids)) {
      const us = (b.ticks[label] - a.ticks[label]) * usPerTick
      cpuUs += us
      cpuUsPerMsgBy[label] = delivered > 0 ? us / delivered : NaN
      cpuPercentBy[label] = (us / (windowS * 1e6)) * 100
      sysUsPerMsgBy[label] = delivered > 0 ? (b.sysTicks[label] - a.sysTicks[label]) * usPerTick / delivered : NaN
      syscallsPerMsgBy[label] = delivered > 0 ? (b.calls[label] - a.calls[label]) / delivered : NaN
    }
    const selfUs = (b.self.user + b.self.system) - (a.self.user + a.self.system)
    await pubs.close('all', false)
    await subs.close('all', false)
    return {
      kind: plan.kind,
      qos: plan.qos,
      round: plan.round,
      sentPerS: (b.pub.sent - a.pub.sent) / windowS,
      deliveredPerS: delivered / windowS,
      cpuUsPerMsgBy,
      cpuUsPerMsg: delivered > 0 ? cpuUs / delivered : NaN,
      cpuPercentBy,
      sysUsPerMsgBy,
      syscallsPerMsgBy,
      p50Ms: histogram.total > 0 ? histogram.percentile(50) / 1000 : null,
      p99Ms: histogram.total > 0 ? histogram.percentile(99) / 1000 : null,
      generatorCpuPercent: (selfUs / (windowS * 1e6)) * 100,
      load,
      sentTotal: totals.sent,
      receivedTotal: totals.received
    }
  } finally {
    await pubs.terminate()
    await subs.terminate()
  }
}
