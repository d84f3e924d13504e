/**
 * The shape of one door of `npm run fuzz` (bench/fuzz.ts): the MQTT doors (doors.ts) and
 * the cluster, API and control-socket doors are entries of the same table.
 */
import type { FuzzNode } from './node-under-test.js'

/** What a door's run is given. */
export interface DoorRun {
  /** The node under attack, started for this door alone. */
  node: FuzzNode
  inputs: number
  seed: number
  concurrency: number
  strict: boolean
  /** Prints one progress line. */
  progress: (line: string) => void
}

/** What a door's run found. */
export interface DoorResult {
  /** The report, one count per line. */
  lines: string[]
  /** Whether the door's own bar was met (the node's exit and stderr are checked by the caller). */
  ok: boolean
}

/** One door of the fuzzer. */
export interface DoorEntry {
  name: string
  summary: string
  /** `STARLING_*` variables the door's node is started with (default none). */
  nodeEnv?: Record<string, string>
  run: (run: DoorRun) => Promise<DoorResult>
}
