/**
 * The wire protocol between `starling-ctl` and a running node: newline-delimited JSON over
 * the node's local control socket (`<node.data_dir>/starling-ctl.sock`).
 *
 * Each line is one JSON object. A client sends requests; the node answers each with one
 * response line carrying the request's `id`. Responses on one connection may come back in
 * any order when several requests are in flight, so clients match them by `id`.
 */
import path from 'node:path'

/** File name of the control socket inside `node.data_dir`. */
export const CONTROL_SOCKET_NAME = 'starling-ctl.sock'

/**
 * Longest Unix socket path we accept. Linux allows 107 bytes and macOS 103; we take the
 * smaller so a data_dir that works on one works on both.
 */
export const MAX_SOCKET_PATH_BYTES = 103

/** Longest request or response line, in bytes. Guards the node against a runaway client. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024

/** Option values a command takes: `--flag` is `true`, `--key value` is a string. */
export type ControlOptions = Record<string, string | boolean>

/** One command sent by a client. `command` is space-joined words (`status`, `plugins list`). */
export interface ControlRequest {
  /** Chosen by the client, echoed in the response; unique among its in-flight requests. */
  id: number
  command: string
  /** Positional arguments, in order. */
  args: string[]
  options: ControlOptions
}

/** The error half of a response. `code` is the spec's API code (101-115) when one applies. */
export interface ControlErrorBody {
  message: string
  code?: number
}

/**
 * The node's answer to one request. `id` is `null` only when the request line could not be
 * read at all (bad JSON, no numeric id), so it cannot be matched to a request.
 */
export type ControlResponse =
  | { id: number | null, ok: true, result: unknown }
  | { id: number | null, ok: false, error: ControlErrorBody }

/** Serialises a request or response as one protocol line (JSON plus `\n`). */
export function encodeLine (message: ControlRequest | ControlResponse): string {
  return JSON.stringify(message) + '\n'
}

/**
 * Reads a request line. Throws an Error naming what is wrong when the line is not JSON or
 * not a well-formed request; `id` is recovered when it was readable so the error response
 * can still be matched.
 */
export function parseRequest (line: string): ControlRequest {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    throw new RequestFormatError('request is not valid JSON', null)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new RequestFormatError('request must be a JSON object', null)
  }
  const req = value as Record<string, unknown>
  const id = typeof req.id === 'number' && Number.isFinite(req.id) ? req.id : null
  if (id === null) throw new RequestFormatError('request needs a numeric "id"', null)
  if (typeof req.command !== 'string' || req.command.trim() === '') {
    throw new RequestFormatError('request needs a non-empty string "command"', id)
  }
  const args = req.args ?? []
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string')) {
    throw new RequestFormatError('"args" must be an array of strings', id)
  }
  const options = req.options ?? {}
  if (typeof options !== 'object' || options === null || Array.isArray(options) ||
      !Object.values(options).every((v) => typeof v === 'string' || typeof v === 'boolean')) {
    throw new RequestFormatError('"options" must be an object of string or boolean values', id)
  }
  return { id, command: normaliseCommand(req.command), args, options: options as ControlOptions }
}

/**
 * Reads a response line. Throws when the line is not a response, which means the other end
 * is not a Starling node (or a newer one speaking another protocol).
 */
export function parseResponse (line: string): ControlResponse {
  const value = JSON.parse(line) as Record<string, unknown> | null
  if (typeof value !== 'object' || value === null || typeof value.ok !== 'boolean') {
    throw new Error('response is not a control protocol response')
  }
  if (value.ok) return { id: value.id as number | null, ok: true, result: value.result ?? null }
  const error = value.error as Partial<ControlErrorBody> | undefined
  return {
    id: value.id as number | null,
    ok: false,
    error: {
      message: typeof error?.message === 'string' ? error.message : 'unknown error',
      ...(typeof error?.code === 'number' ? { code: error.code } : {})
    }
  }
}

/** Collapses runs of whitespace so `plugins  list` and `plugins list` name the same command. */
export function normaliseCommand (command: string): string {
  return command.trim().split(/\s+/).join(' ')
}

/** The control socket path for a node whose `node.data_dir` resolves to `dataDir`. */
export function controlSocketPath (dataDir: string): string {
  return path.join(dataDir, CONTROL_SOCKET_NAME)
}

/** Thrown by {@link parseRequest}; carries the request id when it was readable. */
export class RequestFormatError extends Error {
  constructor (message: string, readonly requestId: number | null) {
    super(message)
    this.name = 'RequestFormatError'
  }
}

/**
 * Splits a byte stream into lines. Calls `onLine` for each complete line (without `\n`,
 * empty lines skipped) and `onOverflow` once if a line grows past {@link MAX_LINE_BYTES}.
 * Returns the function to feed chunks into.
 */
export function createLineReader (onLine: (line: string) => void, onOverflow: () => void): (chunk: Buffer) => void {
  let pending: Buffer[] = []
  let pendingBytes = 0
  let overflowed = false
  return (chunk) => {
    if (overflowed) return
    let start = 0
    let nl = chunk.indexOf(0x0a, start)
    while (nl !== -1) {
      pending.push(chunk.subarray(start, nl))
      const line = Buffer.concat(pending).toString('utf8').trim()
      pending = []
      pendingBytes = 0
      if (line !== '') onLine(line)
      start = nl + 1
      nl = chunk.indexOf(0x0a, start)
    }
    if (start < chunk.length) {
      pending.push(chunk.subarray(start))
      pendingBytes += chunk.length - start
      if (pendingBytes > MAX_LINE_BYTES) {
        overflowed = true
        pending = []
        onOverflow()
      }
    }
  }
}
