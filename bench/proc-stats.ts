/**
 * Broker CPU time and memory read from procfs (proc(5)). A broker may fork helpers (a
 * cluster of node processes), so every reading covers the broker process and all its
 * live descendants.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'

let clockTicks = 0

/** Clock ticks per second for /proc/<pid>/stat times (`getconf CLK_TCK`, almost always 100). */
export function clockTicksPerSecond (): number {
  if (clockTicks === 0) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
    } catch {
      clockTicks = 100
    }
  }
  return clockTicks
}

/** One reading of a process tree. */
export interface ProcessTreeStats {
  /** utime + stime of every process in the tree, in clock ticks. */
  cpuTicks: number
  /** Sum of VmRSS over the tree, in KiB. */
  rssKb: number
  /** Number of processes read (0 when the root has exited). */
  processes: number
}

/** utime + stime of one process, in clock ticks, or -1 when it is gone. */
function readCpuTicks (pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // comm may contain spaces and parentheses: fields restart after the last ')'
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // fields[0] is field 3 (state); utime is field 14, stime field 15
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return -1
  }
}

/** VmRSS of one process in KiB, or 0 when it is gone (or a zombie). */
function readRssKb (pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match === null ? 0 : Number(match[1])
  } catch {
    return 0
  }
}

/** Live children of `pid` (any thread may have forked them). */
function childrenOf (pid: number): number[] {
  const out: number[] = []
  let tasks: string[]
  try {
    tasks = readdirSync(`/proc/${pid}/task`)
  } catch {
    return out
  }
  for (const task of tasks) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim()
      if (text !== '') for (const child of text.split(' ')) out.push(Number(child))
    } catch {
      // the thread exited between readdir and read
    }
  }
  return out
}

/** Reads CPU ticks and RSS for `rootPid` and its descendants. */
export function readProcessTree (rootPid: number): ProcessTreeStats {
  const result: ProcessTreeStats = { cpuTicks: 0, rssKb: 0, processes: 0 }
  const queue = [rootPid]
  while (queue.length > 0) {
    const pid = queue.pop() as number
    const ticks = readCpuTicks(pid)
    if (ticks < 0) continue
    result.cpuTicks += ticks
    result.rssKb += readRssKb(pid)
    result.processes++
    queue.push(...childrenOf(pid))
  }
  return result
}

/**
 * Scheduler times (the kernel's schedstats, /proc/<pid>/task/<tid>/schedstat): nanoseconds
 * run on a CPU and waited on a run queue (runnable but not running: the CPUs were busy with
 * others). `tree`: every thread of `pid` and its descendants; `main`: `pid`'s main thread only
 * (a Node.js process's JavaScript). Zeros without schedstats.
 */
export function readSched (pid: number, scope: 'tree' | 'main'): { runNs: number, waitNs: number } {
  const out = { runNs: 0, waitNs: 0 }
  const add = (path: string): void => {
    try {
      const [run, wait] = readFileSync(path, 'utf8').split(' ')
      out.runNs += Number(run)
      out.waitNs += Number(wait)
    } catch {
      // the thread exited
    }
  }
  if (scope === 'main') {
    add(`/proc/${pid}/task/${pid}/schedstat`)
    return out
  }
  const queue = [pid]
  while (queue.length > 0) {
    const p = queue.pop() as number
    let tasks: string[]
    try {
      tasks = readdirSync(`/proc/${p}/task`)
    } catch {
      continue
    }
    for (const task of tasks) add(`/proc/${p}/task/${task}/schedstat`)
    queue.push(...childrenOf(p))
  }
  return out
}

/** True while `pid` exists and is not a zombie. */
export function isAlive (pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat[stat.lastIndexOf(')') + 2] !== 'Z'
  } catch {
    return false
  }
}

/** Soft and hard limits on open files of this process (from /proc/self/limits). */
export function openFileLimits (): { soft: number, hard: number } {
  try {
    const match = /^Max open files\s+(\S+)\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    if (match !== null) {
      const parse = (v: string): number => v === 'unlimited' ? Infinity : Number(v)
      return { soft: parse(match[1]), hard: parse(match[2]) }
    }
  } catch {
    // not Linux: fall through
  }
  return { soft: Infinity, hard: Infinity }
}
