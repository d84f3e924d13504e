/**
 * Raises and clears the `system` alarms from periodic measurements, with EMQ X 4's keys:
 *
 * | alarm | checked every | raised when | cleared when |
 * |---|---|---|---|
 * | cpu_high_watermark | os_mon.cpu_check_interval | CPU usage > cpu_high_watermark | usage < cpu_low_watermark |
 * | system_memory_high_watermark | os_mon.mem_check_interval | used / total > sysmem_high_watermark | at or below it |
 * | process_memory_high_watermark | os_mon.mem_check_interval | RSS / total > procmem_high_watermark | at or below it |
 * | too_many_processes | vm_mon.check_interval | open fds / limit > process_high_watermark | below process_low_watermark |
 *
 * A low watermark above its high one is taken as the high one. Thresholds are read from
 * the config at every check.
 */
import type { Logger } from '../logger.js'
import { formatPercent } from '../config/value-types.js'
import type { Alarms } from './alarms.js'
import { cpuUsage, systemProbes, type CpuTimes, type OsProbes } from './os-probes.js'

/** The config keys the monitor reads (durations in ms, watermarks as fractions). */
export interface OsMonitorConfig {
  readonly 'os_mon.cpu_check_interval': number
  readonly 'os_mon.cpu_high_watermark': number
  readonly 'os_mon.cpu_low_watermark': number
  readonly 'os_mon.mem_check_interval': number
  readonly 'os_mon.sysmem_high_watermark': number
  readonly 'os_mon.procmem_high_watermark': number
  readonly 'vm_mon.check_interval': number
  readonly 'vm_mon.process_high_watermark': number
  readonly 'vm_mon.process_low_watermark': number
}

/** What the monitor uses from the node. */
export interface OsMonitorNode {
  readonly config: OsMonitorConfig
  readonly logger: Logger
}

/** The OS monitor service; `check*` run one check now (tests, the API). */
export interface OsMonitor {
  start(): void
  stop(): void
  checkCpu(): void
  checkMemory(): void
  checkProcesses(): void
}

/** Creates the OS monitor of a node, raising into `alarms`. */
export function createOsMonitor (node: OsMonitorNode, alarms: Alarms, probes: OsProbes = systemProbes): OsMonitor {
  const logger = node.logger.child({ component: 'os_mon' })
  const timers: Array<ReturnType<typeof setInterval>> = []
  let lastCpu: CpuTimes | null = null
  let fdsUnknownLogged = false

  /** Raises `id` above `high`; clears it below `low` (at or below `high` when there is no low watermark). */
  function judge (id: string, value: number, high: number, low: number | null, desc: () => string, details: () => Record<string, unknown>): void {
    if (value > high) alarms.activate(id, desc(), details())
    else if (low === null || value < Math.min(low, high)) alarms.deactivate(id)
  }

  function checkCpu (): void {
    const now = probes.cpuTimes()
    const before = lastCpu
    lastCpu = now
    if (before === null) return
    const usage = cpuUsage(before, now)
    const c = node.config
    const high = c['os_mon.cpu_high_watermark']
    const low = c['os_mon.cpu_low_watermark']
    judge('cpu_high_watermark', usage, high, low,
      () => `CPU usage ${pct(usage)} is above os_mon.cpu_high_watermark ${formatPercent(high)}`,
      () => ({ usage: pct(usage), high_watermark: formatPercent(high), low_watermark: formatPercent(low) }))
  }

  function checkMemory (): void {
    const c = node.config
    const { total, available } = probes.systemMemory()
    if (total <= 0) return
    const used = total - available
    const sysHigh = c['os_mon.sysmem_high_watermark']
    const sysUsage = used / total
    judge('system_memory_high_watermark', sysUsage, sysHigh, null,
      () => `system memory in use ${pct(sysUsage)} is above os_mon.sysmem_high_watermark ${formatPercent(sysHigh)}`,
      () => ({ usage: pct(sysUsage), used, total, high_watermark: formatPercent(sysHigh) }))
    const rss = probes.processMemory()
    const procHigh = c['os_mon.procmem_high_watermark']
    const procUsage = rss / total
    judge('process_memory_high_watermark', procUsage, procHigh, null,
      () => `node process memory ${pct(procUsage)} of the total is above os_mon.procmem_high_watermark ${formatPercent(procHigh)}`,
      () => ({ usage: pct(procUsage), rss, total, high_watermark: formatPercent(procHigh) }))
  }

  function checkProcesses (): void {
    const fds = probes.fileDescriptors()
    if (fds === null || !Number.isFinite(fds.limit) || fds.limit <= 0) {
      if (!fdsUnknownLogged) logger.info('open file descriptors or their limit unknown here: too_many_processes is not checked')
      fdsUnknownLogged = true
      return
    }
    const c = node.config
    const high = c['vm_mon.process_high_watermark']
    const low = c['vm_mon.process_low_watermark']
    const usage = fds.open / fds.limit
    judge('too_many_processes', usage, high, low,
      () => `${fds.open} open file descriptors (${pct(usage)} of the limit ${fds.limit}) are above vm_mon.process_high_watermark ${formatPercent(high)}`,
      () => ({ usage: pct(usage), open: fds.open, limit: fds.limit, high_watermark: formatPercent(high), low_watermark: formatPercent(low) }))
  }

  function every (ms: number, check: () => void): void {
    const timer = setInterval(() => {
      try { check() } catch (err) { logger.warn({ err }, 'os_mon check failed') }
    }, ms)
    timer.unref?.()
    timers.push(timer)
  }

  return {
    checkCpu,
    checkMemory,
    checkProcesses,
    start () {
      if (timers.length > 0) return
      const c = node.config
      lastCpu = probes.cpuTimes()
      checkMemory()
      checkProcesses()
      every(c['os_mon.cpu_check_interval'], checkCpu)
      every(c['os_mon.mem_check_interval'], checkMemory)
      every(c['vm_mon.check_interval'], checkProcesses)
    },
    stop () {
      for (const timer of timers.splice(0)) clearInterval(timer)
    }
  }
}

/** A fraction as EMQ X shows usage: `91.32%`. */
function pct (fraction: number): string {
  return `${(fraction * 100).toFixed(2)}%`
}
