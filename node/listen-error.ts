/**
 * A listener that cannot bind stops the node's start (MQTT listeners, the management API,
 * the cluster mesh alike) with one line that names the configuration key, the address and
 * the reason, e.g. `cannot listen on 127.0.0.1:1883 (listener.tcp.external): address already
 * in use`. Whatever had started by then is stopped again by the caller.
 */

/** Short reasons for the system errors a bind fails with. */
const REASONS: Record<string, string> = {
  EADDRINUSE: 'address already in use',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'address not available on this host',
  ENOTFOUND: 'host name not found'
}

/** The bind failure of one listener. */
export class ListenError extends Error {
  /** `key`: the configuration key of the address; `address`: as configured (`host:port`). */
  constructor (readonly key: string, readonly address: string, cause: unknown) {
    super(`cannot listen on ${address} (${key}): ${reasonOf(cause)}`, { cause })
    this.name = 'ListenError'
  }
}

/**
 * The reason in a few words: the system error's code when there is one (libp2p wraps it in
 * a paragraph of advice and a stack), else the first line of the message.
 */
export function reasonOf (err: unknown): string {
  const code = systemCode(err)
  if (code !== undefined) return REASONS[code] ?? code
  const message = err instanceof Error ? err.message : String(err)
  return message.split('\n')[0]
}

function systemCode (err: unknown, depth = 0): string | undefined {
  if (err === null || typeof err !== 'object' || depth > 4) return undefined
  const e = err as { code?: unknown, message?: unknown, cause?: unknown, errors?: unknown }
  if (typeof e.code === 'string' && e.code.startsWith('E')) return e.code
  if (typeof e.message === 'string') {
    const m = /\b(EADDRINUSE|EACCES|EADDRNOTAVAIL|ENOTFOUND)\b/.exec(e.message)
    if (m !== null) return m[1]
  }
  if (Array.isArray(e.errors)) {
    for (const inner of e.errors) { const c = systemCode(inner, depth + 1); if (c !== undefined) return c }
  }
  return systemCode(e.cause, depth + 1)
}
