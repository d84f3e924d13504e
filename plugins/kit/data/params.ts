/**
 * The params every data-integration resource type and action shares (EMQ X 4.4 Enterprise's
 * names and defaults where EMQ X had the key; docs/integrations.md): the resource's buffer
 * (`local_buffer`, `max_buffer_bytes`, `retry_timeout`), its pool and reconnect switch, and
 * the actions' batch arguments (`enable_batch`, `batch_size`, `batch_time`, `insert_mode`,
 * `sync_timeout`). The titles and descriptions are what the dashboard's forms show.
 */
import { WrongTypeError } from '../../../node/errors.js'
import type { ParamSpecs } from '../../../rules/types.js'

/** `max_buffer_bytes`' default: 1 GiB. */
export const DEFAULT_MAX_BUFFER_BYTES = 1024 * 1024 * 1024
/** `retry_timeout`'s default, in ms. */
export const DEFAULT_RETRY_TIMEOUT_MS = 30_000

/** The buffer and connection params of a data resource (beside the backend's own address, credentials and TLS). */
export const DATA_RESOURCE_PARAMS: ParamSpecs = {
  pool_size: {
    type: 'integer', required: false, default: 8, title: 'Pool Size',
    description: 'Most connections open to the server from each node. Writes of one resource go one batch at a time, in order (PostgreSQL: two in flight on one more connection of their own, the second committed only after the first); the health check may use another'
  },
  auto_reconnect: {
    type: 'boolean', required: false, default: true, title: 'Enable Reconnect',
    description: 'Reconnect, with back-off, after the connection is lost; false: once lost, the resource stays down (is_alive false) until it is changed or the node restarts'
  },
  local_buffer: {
    type: 'boolean', required: false, default: false, title: 'Local Disk Buffer',
    description: 'true: writes wait on disk (under the node\'s data directory, resources/<id>/) while the server is away, and are written in order when it is back, across node restarts; false: they wait in memory up to retry_timeout, then count as failed'
  },
  max_buffer_bytes: {
    type: 'integer', required: false, default: DEFAULT_MAX_BUFFER_BYTES, title: 'Max Buffer Size',
    description: 'Most bytes of writes waiting for the server (on disk: their encoded size; in memory: their JSON length, estimated); beyond it the oldest are dropped, counted and logged'
  },
  retry_timeout: {
    type: 'integer', required: false, default: DEFAULT_RETRY_TIMEOUT_MS, title: 'Retry Timeout',
    description: 'Without the local buffer, async mode: how long (ms) a write the server cannot take is retried before it counts as failed (never written later)'
  }
}

/** `insert_mode`. */
export type InsertMode = 'sync' | 'async'

/** The batch params of a data action (EMQ X 4.4's SQL batch arguments). */
export const DATA_BATCH_PARAMS: ParamSpecs = {
  enable_batch: {
    type: 'boolean', required: false, default: true, title: 'Enable Batch',
    description: 'Write up to batch_size rows of this action at once (one multi-row statement or one transaction)'
  },
  batch_size: {
    type: 'integer', required: false, default: 100, title: 'Max Batch Size',
    description: 'Most rows of one batch'
  },
  batch_time: {
    type: 'integer', required: false, default: 10, title: 'Max Batch Interval',
    description: 'Longest wait (ms) for a batch to fill before it is written'
  },
  insert_mode: {
    type: 'string', enum: ['sync', 'async'], required: false, default: 'async', title: 'Insert Mode',
    description: 'async: the publisher is acknowledged at once, and a write the server cannot take is retried up to the resource\'s retry_timeout; sync: a QoS 1/2 publisher\'s acknowledgement (PUBACK/PUBREC) waits until the row is written or counted failed, at most sync_timeout. Neither ever holds up delivery to subscribers'
  },
  sync_timeout: {
    type: 'integer', required: false, default: 5000, title: 'Sync Timeout',
    description: 'sync mode: how long (ms) a write may take, waiting included, before it counts as failed and the publisher is acknowledged (not written later; a write already sent may still land)'
  }
}

/** The resource side of the params, read. */
export interface DataResourceSettings {
  poolSize: number
  autoReconnect: boolean
  localBuffer: boolean
  maxBufferBytes: number
  retryTimeoutMs: number
  /**
   * A sync deadline of the resource's own (ms; EMQ X 4.4's Kafka resource has `sync_timeout`,
   * its action none): its actions in sync mode use it instead of theirs. Absent: theirs.
   */
  syncTimeoutMs?: number
}

/** The action side of the params, read. */
export interface DataBatchSettings {
  batchSize: number
  batchTimeMs: number
  mode: InsertMode
  syncTimeoutMs: number
}

function atLeast (what: string, key: string, value: unknown, min: number): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n < min) throw new WrongTypeError(`${what}: parameter ${key} must be a whole number of at least ${min}, got ${JSON.stringify(value)}`)
  return n
}

/** Reads (and checks: 108) the shared params of a resource config with its defaults filled. */
export function dataResourceSettings (config: Record<string, unknown>, what: string): DataResourceSettings {
  return {
    poolSize: atLeast(what, 'pool_size', config.pool_size, 1),
    autoReconnect: config.auto_reconnect !== false,
    localBuffer: config.local_buffer === true,
    maxBufferBytes: atLeast(what, 'max_buffer_bytes', config.max_buffer_bytes, 1024),
    retryTimeoutMs: atLeast(what, 'retry_timeout', config.retry_timeout, 1)
  }
}

/** Reads (and checks: 108) the batch params of an action with its defaults filled. */
export function dataBatchSettings (params: Record<string, unknown>, what: string): DataBatchSettings {
  const batch = params.enable_batch !== false
  return {
    batchSize: batch ? atLeast(what, 'batch_size', params.batch_size, 1) : 1,
    batchTimeMs: batch ? atLeast(what, 'batch_time', params.batch_time, 0) : 0,
    mode: params.insert_mode === 'sync' ? 'sync' : 'async',
    syncTimeoutMs: atLeast(what, 'sync_timeout', params.sync_timeout, 1)
  }
}
