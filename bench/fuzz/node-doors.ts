/**
 * The fuzzer's doors past the MQTT listeners, as entries of `npm run fuzz`'s table
 * (bench/fuzz.ts, {@link DoorEntry}): `cluster` (cluster-door.ts), `api` (api-door.ts) and
 * `ctl` (ctl-door.ts). Each is given a fresh node; the cluster door starts a second member
 * beside it and joins it, so that the witness's messages cross the cluster link and the
 * member's staying in the cluster is part of the bar.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { DoorEntry, DoorResult, DoorRun } from './door-entry.js'
import { startFuzzNode, type FuzzNode } from './node-under-test.js'
import type { DoorOptions, DoorStats } from './door-kit.js'
import { runClusterDoor } from './cluster-door.js'
import { runApiDoor } from './api-door.js'
import { runCtlDoor } from './ctl-door.js'

/** dist/bench/fuzz/node-doors.js → the repository root (the second member runs from there). */
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..')

/** The node's defaults (etc/starling.conf), which startFuzzNode keeps. */
const DEFAULT_NAME = 'starling@127.0.0.1'
const DEFAULT_COOKIE = 'starlingsecretcookie'

/** The options every door takes, from the run. */
function doorOptions (run: DoorRun): DoorOptions {
  return {
    inputs: run.inputs,
    seed: run.seed,
    concurrency: run.concurrency,
    alive: () => !run.node.exited(),
    onProgress: (s) => { run.progress(progressLine(s)) }
  }
}

function progressLine (s: DoorStats): string {
  const rate = s.elapsedMs > 0 ? Math.round(s.inputs / (s.elapsedMs / 1000)) : 0
  const failures = Object.values(s.failures).reduce((a, b) => a + b, 0)
  return `${s.door}: ${s.inputs} inputs (${rate}/s), ${failures} failures, witness ${s.witnessReceived}/${s.witnessSent}`
}

/** The report of a door's counts; its bar: no failure, and the witness connected with nothing lost. */
function result (s: DoorStats): DoorResult {
  const ok = Object.keys(s.failures).length === 0 && s.witnessConnected && s.witnessReceived === s.witnessSent && s.witnessSent > 0
  return {
    ok,
    lines: [
      `inputs:                           ${s.inputs} (${Math.round(s.inputs / Math.max(1, s.elapsedMs / 1000))}/s over ${(s.elapsedMs / 1000).toFixed(1)} s)`,
      `inputs by kind:                   ${JSON.stringify(s.byKind)}`,
      `answers:                          ${JSON.stringify(s.answers)}`,
      `failures:                         ${JSON.stringify(s.failures)}`,
      ...Object.entries(s.examples).map(([kind, list]) => `  e.g. ${kind}: ${list.slice(0, 3).join('\n       ')}`),
      `witness QoS 1 sent / received:    ${s.witnessSent} / ${s.witnessReceived}`,
      `witness stayed connected:         ${s.witnessConnected}`,
      ...(s.witnessMissing.length > 0 ? [`witness lost (runs):              ${s.witnessMissing.join('\n                                  ')}`] : [])
    ]
  }
}

/** `starling-ctl argv` against the node whose `STARLING_*` variables are `env`. */
function ctl (env: Record<string, string>, argv: string[]): { code: number | null, out: string } {
  const childEnv: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('STARLING_') && k !== 'NODE_OPTIONS') childEnv[k] = v
  const done = spawnSync(process.execPath, [path.join(repoRoot, 'bin/starling-ctl'), ...argv], { cwd: repoRoot, env: { ...childEnv, ...env }, encoding: 'utf8', timeout: 30_000 })
  return { code: done.status, out: done.stdout + done.stderr }
}

/** The cluster port: peers that fail and pass the cookie; a second member joined to the node. */
export const CLUSTER_DOOR: DoorEntry = {
  name: 'cluster',
  summary: 'the cluster port: TCP garbage, cut handshakes and another cookie; with the cookie, garbled handshakes, mutated link, bridge and gossip frames',
  run: async (run) => {
    const member: FuzzNode = await startFuzzNode(repoRoot, { STARLING_NODE__NAME: 'fuzz-member@127.0.0.1' })
    try {
      const joined = ctl(member.env, ['cluster', 'join', `${DEFAULT_NAME}:${run.node.ports.cluster}`])
      if (joined.code !== 0) throw new Error(`the second member could not join: ${joined.out}`)
      const running = (): string[] => {
        const { out } = ctl(run.node.env, ['cluster', 'status', '--json'])
        try { return (JSON.parse(out) as Array<{ name: string, status: string }>).filter(m => m.status === 'running').map(m => m.name).sort() } catch { return [] }
      }
      const opts = doorOptions(run)
      return result(await runClusterDoor({
        ...opts,
        alive: () => !run.node.exited() && !member.exited(),
        clusterPort: run.node.ports.cluster,
        cookie: run.node.env.STARLING_NODE__COOKIE ?? DEFAULT_COOKIE,
        nodeName: run.node.env.STARLING_NODE__NAME ?? DEFAULT_NAME,
        mqttPort: run.node.ports['mqtt:tcp'],
        peerMqttPort: member.ports['mqtt:tcp'],
        memberNames: [DEFAULT_NAME, 'fuzz-member@127.0.0.1'],
        checkMembers: async () => running().length === 2
      }))
    } finally {
      await member.stop()
    }
  }
}

/** The management API: schema-aware mutation of every route of the route table. */
export const API_DOOR: DoorEntry = {
  name: 'api',
  summary: 'the management API: every route with bodies mutated from its schema, bad queries, paths, JSON, encodings, credentials, raw HTTP',
  run: async (run) => result(await runApiDoor({ ...doorOptions(run), apiPort: run.node.ports.api, mqttPort: run.node.ports['mqtt:tcp'] }))
}

/** The control socket: starling-ctl's commands mutated, bad requests, long lines, half-closed connections. */
export const CTL_DOOR: DoorEntry = {
  name: 'ctl',
  summary: 'the control socket: every starling-ctl command with bad arguments and options, requests of the wrong shape, garbage and long lines, half-closes',
  run: async (run) => {
    const traceDir = mkdtempSync(path.join(os.tmpdir(), 'stfz-trace-'))
    try {
      return result(await runCtlDoor({ ...doorOptions(run), socketPath: path.join(run.node.dataDir, 'starling-ctl.sock'), traceDir, mqttPort: run.node.ports['mqtt:tcp'] }))
    } finally {
      rmSync(traceDir, { recursive: true, force: true })
    }
  }
}

/** The three, in the order `npm run fuzz` runs them after the MQTT doors. */
export const NODE_DOORS: DoorEntry[] = [CLUSTER_DOOR, API_DOOR, CTL_DOOR]
