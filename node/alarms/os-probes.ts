/**
 * Measurements the OS monitor compares with its thresholds: CPU usage of the machine,
 * memory of the machine and of this process, open file descriptors against the
 * open-files limit. Linux reads `/proc`; elsewhere what `node:os` offers, and no file
 * descriptor count (the `too_many_processes` check is then skipped).
 */
import { cpus, freemem, totalmem } from 'node:os'
import { readFileSync, readdirSync } from 'node:fs'

/** Cumulative CPU times of all cores, ms. */
export interface CpuTimes { idle: number, total: number }

/** What the OS monitor measures; replaceable in tests. */
export interface OsProbes {
  /** Cumulative CPU times; usage is computed between two readings. */
  cpuTimes (): CpuTimes
  /** Machine memory: total and available to new work (Linux MemAvailable), bytes. */
  systemMemory (): { total: number, available: number }
  /** Resident memory of this process, bytes. */
  processMemory (): number
  /** Open file descriptors and the soft open-files limit, or null when unknown. */
  fileDescriptors (): { open: number, limit: number } | null
}

/** CPU usage between two readings, 0..1 (0 when no time passed). */
export function cpuUsage (before: CpuTimes, after: CpuTimes): number {
  const total = after.total - before.total
  if (total <= 0) return 0
  return Math.min(1, Math.max(0, 1 - (after.idle - before.idle) / total))
}

/** `Max open files` soft limit from the text of `/proc/<pid>/limits`; Infinity when unlimited. */
export function parseOpenFilesLimit (limits: string): number | null {
  const m = /^Max open files\s+(\S+)\s+/m.exec(limits)
  if (m === null) return null
  return m[1] === 'unlimited' ? Infinity : Number(m[1])
}

/** `MemTotal` and `MemAvailable` (bytes) from the text of `/proc/meminfo`. */
export function parseMeminfo (meminfo: string): { total: number, available: number } | null {
  const total = /^MemTotal:\s+(\d+) kB/m.exec(meminfo)
  const available = /^MemAvailable:\s+(\d+) kB/m.exec(meminfo)
  if (total === null || available === null) return null
  return { total: Number(total[1]) * 1024, available: Number(available[1]) * 1024 }
}

/** The probes of this machine. */
export const systemProbes: OsProbes = {
  cpuTimes () {
    let idle = 0
    let total = 0
    for (const cpu of cpus()) {
      const t = cpu.times
      idle += t.idle
      total += t.user + t.nice + t.sys + t.idle + t.irq
    }
    return { idle, total }
  },
  systemMemory () {
    try {
      const parsed = parseMeminfo(readFileSync('/proc/meminfo', 'utf8'))
      if (parsed !== null) return parsed
    } catch {
      // not Linux: below
    }
    return { total: totalmem(), available: freemem() }
  },
  processMemory: () => process.memoryUsage.rss(),
  fileDescriptors () {
    try {
      const limit = parseOpenFilesLimit(readFileSync('/proc/self/limits', 'utf8'))
      if (limit === null) return null
      // reading the directory holds one descriptor of its own
      const open = readdirSync('/proc/self/fd').length - 1
      return { open, limit }
    } catch {
      return null
    }
  }
}
