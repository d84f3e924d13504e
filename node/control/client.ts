/**
 * The client side of the control channel: sends one command to the local node over its
 * control socket and returns the node's result.
 */
import net from 'node:net'
import {
  MAX_SOCKET_PATH_BYTES, createLineReader, encodeLine, normaliseCommand, parseResponse,
  type ControlOptions
} from './protocol.js'
import { ControlError, ControlSocketPathTooLongError, NodeNotRunningError } from './errors.js'

/** How long {@link callControl} waits for an answer unless told otherwise. */
export const DEFAULT_CONTROL_TIMEOUT_MS = 30_000

/** Options of {@link callControl}. */
export interface CallControlOptions {
  /** The node's `node.name`, used in messages (`Node <name> is not running ...`). */
  nodeName: string
  /** Give up after this long (default {@link DEFAULT_CONTROL_TIMEOUT_MS}). */
  timeoutMs?: number
  /** Abandons the call; the promise rejects with the signal's reason. */
  signal?: AbortSignal
}

let nextId = 1

/**
 * Runs `command` on the node listening at `socketPath` and resolves with its result.
 *
 * Rejects with {@link NodeNotRunningError} when no node listens there, and with
 * {@link ControlError} carrying the node's message (and the spec's code, if any) when the
 * command fails, the node does not answer in time, or the connection breaks.
 */
export function callControl (
  socketPath: string,
  command: string,
  args: string[],
  options: ControlOptions,
  opts: CallControlOptions
): Promise<unknown> {
  const { nodeName, signal } = opts
  const timeoutMs = opts.timeoutMs ?? DEFAULT_CONTROL_TIMEOUT_MS
  const name = normaliseCommand(command)
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
    return Promise.reject(new ControlSocketPathTooLongError(socketPath, MAX_SOCKET_PATH_BYTES))
  }
  if (signal?.aborted === true) return Promise.reject(signal.reason)
  const id = nextId++

  return new Promise((resolve, reject) => {
    let settled = false
    let connected = false
    const socket = net.createConnection(socketPath)

    const finish = (err: unknown, result?: unknown): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      socket.destroy()
      if (err !== undefined) reject(err)
      else resolve(result)
    }
    const onAbort = (): void => finish(signal?.reason ?? new ControlError('Aborted'))
    signal?.addEventListener('abort', onAbort, { once: true })

    const timer = setTimeout(() => {
      finish(new ControlError(`Node ${nodeName} did not answer '${name}' within ${timeoutMs} ms (control socket ${socketPath})`))
    }, timeoutMs)

    socket.on('connect', () => {
      connected = true
      socket.write(encodeLine({ id, command: name, args, options }))
    })
    socket.on('data', createLineReader(
      (line) => {
        let response
        try {
          response = parseResponse(line)
        } catch {
          finish(new ControlError(`Unexpected answer on control socket ${socketPath}; is it a Starling node?`))
          return
        }
        // A null id answers a request the node could not read; ours is the only one in flight.
        if (response.id !== id && response.id !== null) return
        if (response.ok) finish(undefined, response.result)
        else finish(new ControlError(response.error.message, response.error.code))
      },
      () => finish(new ControlError(`Answer from node ${nodeName} is too long`))
    ))
    socket.on('error', (err: NodeJS.ErrnoException) => finish(connectionError(err, connected, nodeName, socketPath)))
    socket.on('close', () => {
      finish(new ControlError(`Node ${nodeName} closed the control connection before answering '${name}'`))
    })
  })
}

/** Turns a socket error into a message that says what to do about it. */
function connectionError (err: NodeJS.ErrnoException, connected: boolean, nodeName: string, socketPath: string): ControlError {
  if (!connected && (err.code === 'ENOENT' || err.code === 'ECONNREFUSED' || err.code === 'ENOTSOCK')) {
    return new NodeNotRunningError(nodeName, socketPath)
  }
  if (err.code === 'EACCES' || err.code === 'EPERM') {
    return new ControlError(`Permission denied on control socket ${socketPath}; run starling-ctl as the user that runs node ${nodeName}`)
  }
  return new ControlError(`Control connection to node ${nodeName} at ${socketPath} failed: ${err.message}`)
}
