import type { Duplex } from 'node:stream'

/** How long a closing connection may go without its unsent bytes shrinking before it is cut off. */
export const LINGER_STEP_MS = 5000
/**
 * Longest a closing connection that keeps reading is kept to deliver its last frames. What
 * it may still have to take is bounded (the socket's buffer stays below
 * `mqtt`'s drop threshold, 8 MiB by default, plus one high-water mark): 30 s is enough for a
 * reader of about 300 KB/s, and a peer that stops reading is cut off one step after it stopped.
 */
export const LINGER_MAX_MS = 30_000

/**
 * What is still to be sent on a connection, in two measures: `written`, the bytes written to
 * the stream (and to the socket under it, for a WebSocket) whose writes have not completed,
 * and `queued`, the bytes of the writes in progress that the kernel has not taken yet.
 * `written` alone moves only when a whole write completes, and one write may be megabytes
 * (a turn's worth of deliveries, or over TLS a record batch): a peer reading 500 KB/s took
 * longer than a step to finish one, and was cut off as if it read nothing (over TLS more
 * often, its readers being slower).
 */
export interface Unsent { written: number, queued: number }

/** {@link Unsent} of `stream`, sent through `transport` (the TCP or TLS socket under a WebSocket stream; itself otherwise). */
export function unsentBytes (stream: Duplex, transport: Duplex): Unsent {
  const written = stream.writableLength + (transport !== stream ? transport.writableLength : 0)
  return { written, queued: kernelQueue(transport) }
}

/**
 * The bytes of `socket`'s writes in progress not yet taken by the kernel: libuv's write queue
 * of the TCP handle (`writeQueueSize`, kept up to date as the kernel takes bytes). A TLS
 * socket's own handle counts its whole ciphertext until the write completes: the TCP socket
 * it wraps (`_parent`) has the handle that moves. 0 when there is no such handle.
 */
function kernelQueue (socket: Duplex): number {
  const s: any = socket
  const handle = s._parent?._handle ?? s._handle
  const size = handle?.writeQueueSize
  return typeof size === 'number' ? size : 0
}

/**
 * Keeps a closing connection (its last frame written, its socket ended) while the peer takes
 * its bytes, then calls `cut`: once nothing was taken for `stepMs`, one step after everything
 * was handed to the kernel, or after {@link LINGER_MAX_MS} at most. Progress is a write that
 * completed, or, the same writes pending, fewer bytes waiting for the kernel.
 */
export function lingerWhileSending (stream: Duplex, transport: Duplex, stepMs: number, cut: () => void): void {
  const started = Date.now()
  let last = unsentBytes(stream, transport)
  const check = (): void => {
    if (stream.destroyed) return
    const now = unsentBytes(stream, transport)
    const empty = now.written === 0 && now.queued === 0
    // shrinking, or just emptied (the peer gets one more step to read the rest and close)
    const progress = empty
      ? last.written > 0 || last.queued > 0
      : now.written < last.written || (now.written === last.written && now.queued < last.queued)
    if (progress && Date.now() - started < LINGER_MAX_MS) {
      last = now
      setTimeout(check, stepMs).unref()
      return
    }
    cut()
  }
  setTimeout(check, stepMs).unref()
}
