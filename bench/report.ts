/**
 * Turns the runs of a bench into the summary table: one row per scenario and broker,
 * each number the median over rounds, plus the CPU-per-message ratio against Mosquitto.
 */
import Table from 'cli-table3'
import type { RunResult } from './scenario-runner.js'

/** The medians of one scenario × broker over its rounds. */
export interface SummaryRow {
  scenario: string
  broker: string
  rounds: number
  cpuUsPerMsg: number | null
  deliveredPerS: number
  expectedPerS: number
  cpuPercent: number
  rssMb: number
  peakRssMb: number
  p50Ms: number | null
  p99Ms: number | null
  p999Ms: number | null
  generatorCpuPercent: number
  kbPerConn: number | null
  cpuUsPerConn: number | null
  /** flood: rounds in which the broker survived and answered a new CONNECT, e.g. "3/3". */
  survived: string | null
  /** cpuUsPerMsg (or KiB/conn for idle) divided by Mosquitto's in the same scenario. */
  vsMosquitto: number | null
  notes: string[]
}

/** Median of the non-null values, or null when there are none. */
export function median (values: Array<number | null | undefined>): number | null {
  const xs = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v)).sort((a, b) => a - b)
  if (xs.length === 0) return null
  const mid = xs.length >> 1
  return xs.length % 2 === 1 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2
}

/** Groups runs by scenario and broker (in first-seen order) and takes medians. */
export function summarize (runs: RunResult[]): SummaryRow[] {
  const groups = new Map<string, RunResult[]>()
  for (const run of runs) {
    const key = `${run.scenario}\u0000${run.broker}`
    const group = groups.get(key) ?? []
    group.push(run)
    groups.set(key, group)
  }
  const rows: SummaryRow[] = []
  for (const group of groups.values()) {
    const m = (pick: (r: RunResult) => number | null | undefined): number | null => median(group.map(pick))
    const flood = group.some((r) => r.survived !== undefined)
    rows.push({
      scenario: group[0].scenario,
      broker: group[0].broker,
      rounds: group.length,
      cpuUsPerMsg: m((r) => r.cpuUsPerMsg),
      deliveredPerS: m((r) => r.deliveredPerS) ?? 0,
      expectedPerS: m((r) => r.expectedPerS) ?? 0,
      cpuPercent: m((r) => r.cpuPercent) ?? 0,
      rssMb: m((r) => r.rssMb) ?? 0,
      peakRssMb: m((r) => r.peakRssMb) ?? 0,
      p50Ms: m((r) => r.p50Ms),
      p99Ms: m((r) => r.p99Ms),
      p999Ms: m((r) => r.p999Ms),
      generatorCpuPercent: m((r) => r.generatorCpuPercent) ?? 0,
      kbPerConn: m((r) => r.kbPerConn),
      cpuUsPerConn: m((r) => r.cpuUsPerConn),
      survived: flood ? `${group.filter((r) => r.survived === true && r.answersConnect === true).length}/${group.length}` : null,
      vsMosquitto: null,
      notes: [...new Set(group.map((r) => r.note).filter((n): n is string => n !== undefined))]
    })
  }
  for (const row of rows) {
    const base = rows.find((r) => r.scenario === row.scenario && r.broker === 'mosquitto')
    if (base === undefined || row === base) continue
    const mine = row.kbPerConn ?? row.cpuUsPerMsg
    const theirs = row.kbPerConn !== null ? base.kbPerConn : base.cpuUsPerMsg
    if (mine !== null && theirs !== null && theirs > 0) row.vsMosquitto = mine / theirs
  }
  return rows
}

function fmt (value: number | null, digits: number): string {
  if (value === null) return '-'
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
}

/** Scenario-specific numbers for the last column. */
function extra (row: SummaryRow): string {
  const parts: string[] = []
  if (row.kbPerConn !== null) parts.push(`${fmt(row.kbPerConn, 1)} KiB/conn, ${fmt(row.cpuUsPerConn, 0)} µs CPU/conn`)
  if (row.survived !== null) parts.push(`survived+reconnect ${row.survived}, peak RSS ${fmt(row.peakRssMb, 0)} MiB`)
  if (row.kbPerConn === null && row.expectedPerS > 0 && row.deliveredPerS < row.expectedPerS * 0.98) {
    parts.push(`delivered ${fmt((row.deliveredPerS / row.expectedPerS) * 100, 0)}% of sent`)
  }
  parts.push(...row.notes)
  return parts.join('; ')
}

/** Renders the summary as a text table. */
export function renderTable (rows: SummaryRow[]): string {
  const table = new Table({
    head: ['scenario', 'broker', 'CPU µs/msg', 'vs mosq', 'delivered msg/s', 'broker CPU %', 'RSS MiB',
      'p50 ms', 'p99 ms', 'p99.9 ms', 'gen CPU %', 'notes'],
    colAligns: ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'left'],
    style: { head: [], border: [], compact: true }
  })
  for (const row of rows) {
    table.push([
      row.scenario,
      row.broker,
      fmt(row.cpuUsPerMsg, 2),
      row.vsMosquitto === null ? '-' : `${fmt(row.vsMosquitto, 2)}x`,
      row.kbPerConn !== null ? '-' : fmt(row.deliveredPerS, 0),
      fmt(row.cpuPercent, 0),
      fmt(row.rssMb, 1),
      fmt(row.p50Ms, 2),
      fmt(row.p99Ms, 2),
      fmt(row.p999Ms, 2),
      fmt(row.generatorCpuPercent, 0),
      extra(row)
    ])
  }
  return table.toString()
}
