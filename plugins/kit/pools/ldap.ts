/**
 * A pool of LDAP connections (ldapts), shared by whoever talks to a directory: the
 * `svc_auth_ldap` plugin today, data integration later.
 *
 * - `size` connections, each used by one request at a time (checked out, then returned):
 *   an LDAP bind changes the identity of the whole connection, so a bind as a user
 *   ({@link LdapPool.checkBind}) must never share it with a search in flight.
 * - Lazy: nothing connects when the pool is made; a connection is opened and bound as the
 *   pool's `bindDn` when a request first needs it, so a pool made while the server is down
 *   is fine, and its requests then fail fast (connection refused) or at `timeoutMs`.
 * - Reconnecting: a connection whose socket failed, or that timed out, is dropped and the
 *   next request opens a new one. `servers` are tried in order, as EMQ X's eldap did.
 * - Bounded: connect, bind and every operation are bounded by `timeoutMs`; a request that
 *   waits for a free connection longer than that fails too.
 *
 * Invariants: a connection handed to a caller is connected and bound as `bindDn` (or about
 * to be rebound: {@link LdapPool.checkBind} restores it before returning it); a closed pool
 * opens nothing and fails every waiter.
 */
import type { ConnectionOptions } from 'node:tls'
import { Client, InvalidCredentialsError, NoSuchObjectError, ResultCodeError, type Entry, type SearchOptions } from 'ldapts'

/** What {@link createLdapPool} takes. */
export interface LdapPoolOptions {
  /** Host names or IP addresses, tried in order. */
  servers: readonly string[]
  port: number
  /** `ldaps://` (TLS from the first byte) instead of `ldap://`. */
  ssl: boolean
  /** TLS options (CA, client certificate, verification) for `ssl`. */
  tls?: ConnectionOptions
  /** Connections (at least 1). */
  size: number
  /** The DN the pool's connections bind as; empty for anonymous. */
  bindDn: string
  bindPassword: string
  /** Longest connect, bind, operation or wait for a free connection. */
  timeoutMs: number
}

/** An open pool. */
export interface LdapPool {
  /** Searches as the pool's bind DN. A base DN that does not exist yields no entries. */
  search: (base: string, options: SearchOptions) => Promise<Entry[]>
  /**
   * Whether `password` is right for `dn`: binds a pooled connection as `dn` (simple bind),
   * then binds it back as the pool's DN. An empty password is refused here without a bind
   * (LDAP would take it as an anonymous bind and answer success).
   */
  checkBind: (dn: string, password: string) => Promise<boolean>
  /** Connections open now. */
  openConnections: () => number
  /** Closes every connection; pending waiters fail. */
  close: () => Promise<void>
}

/** Raised when no connection became free within the timeout, or the pool is closed. */
export class LdapPoolError extends Error {
  readonly code = 'STARLING_LDAP_POOL'
  constructor (message: string) {
    super(message)
    this.name = 'LdapPoolError'
  }
}

interface Slot {
  client: Client | undefined
  /** Whether the connection is bound as the pool's DN (false after a user bind). */
  boundAsPool: boolean
  busy: boolean
}

/** Makes a pool; connects nothing yet. */
export function createLdapPool (opts: LdapPoolOptions): LdapPool {
  if (opts.servers.length === 0) throw new Error('createLdapPool: no servers')
  const slots: Slot[] = Array.from({ length: Math.max(1, opts.size) }, () => ({ client: undefined, boundAsPool: false, busy: false }))
  const waiters: Array<{ resolve: (slot: Slot) => void, reject: (err: Error) => void, timer: NodeJS.Timeout }> = []
  let closed = false
  /** The server that answered last: new connections try it first. */
  let preferred = 0

  const urlOf = (host: string): string =>
    `${opts.ssl ? 'ldaps' : 'ldap'}://${host.includes(':') ? `[${host}]` : host}:${opts.port}`

  function drop (slot: Slot): void {
    const client = slot.client
    slot.client = undefined
    slot.boundAsPool = false
    if (client !== undefined) void client.unbind().catch(() => {})
  }

  /** Opens a connection bound as the pool's DN, trying each server from the preferred one. */
  async function open (slot: Slot): Promise<void> {
    let lastError: unknown
    for (let i = 0; i < opts.servers.length; i++) {
      const index = (preferred + i) % opts.servers.length
      const client = new Client({
        url: urlOf(opts.servers[index]),
        timeout: opts.timeoutMs,
        connectTimeout: opts.timeoutMs,
        tlsOptions: opts.ssl ? { ...opts.tls } : undefined,
        strictDN: false
      })
      try {
        await client.bind(opts.bindDn, opts.bindPassword)
        slot.client = client
        slot.boundAsPool = true
        preferred = index
        return
      } catch (err) {
        void client.unbind().catch(() => {})
        // wrong bind_dn/bind_password: every server would say the same
        if (err instanceof InvalidCredentialsError) throw err
        lastError = err
      }
    }
    throw lastError
  }

  async function acquire (): Promise<Slot> {
    if (closed) throw new LdapPoolError('the LDAP pool is closed')
    const free = slots.find((s) => !s.busy)
    if (free !== undefined) {
      free.busy = true
      return free
    }
    return await new Promise<Slot>((resolve, reject) => {
      const waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          const at = waiters.indexOf(waiter)
          if (at >= 0) waiters.splice(at, 1)
          reject(new LdapPoolError(`no free LDAP connection within ${opts.timeoutMs} ms`))
        }, opts.timeoutMs)
      }
      waiters.push(waiter)
    })
  }

  function release (slot: Slot): void {
    const waiter = waiters.shift()
    if (waiter !== undefined) {
      clearTimeout(waiter.timer)
      waiter.resolve(slot)
      return
    }
    slot.busy = false
  }

  /** Runs `fn` on a connection bound as the pool's DN; a connection-level failure drops it. */
  async function withClient<T> (fn: (client: Client, slot: Slot) => Promise<T>): Promise<T> {
    const slot = await acquire()
    try {
      if (slot.client !== undefined && (!slot.client.isConnected || !slot.client.isBound)) drop(slot)
      if (slot.client === undefined) await open(slot)
      else if (!slot.boundAsPool) {
        await slot.client.bind(opts.bindDn, opts.bindPassword)
        slot.boundAsPool = true
      }
      if (closed) throw new LdapPoolError('the LDAP pool is closed')
      return await fn(slot.client as Client, slot)
    } catch (err) {
      // a result code (no such object, invalid credentials ...) leaves the connection usable
      if (!(err instanceof ResultCodeError) || !slot.boundAsPool) drop(slot)
      throw err
    } finally {
      if (closed) drop(slot)
      release(slot)
    }
  }

  return {
    search: async (base, options) => await withClient(async (client) => {
      try {
        return (await client.search(base, options)).searchEntries
      } catch (err) {
        if (err instanceof NoSuchObjectError) return []
        throw err
      }
    }),
    checkBind: async (dn, password) => {
      if (password === '') return false
      return await withClient(async (client, slot) => {
        slot.boundAsPool = false
        try {
          await client.bind(dn, password)
          return true
        } catch (err) {
          if (err instanceof InvalidCredentialsError) return false
          throw err
        } finally {
          // back to the pool's identity before another request gets the connection
          if (client.isConnected) {
            await client.bind(opts.bindDn, opts.bindPassword).then(() => { slot.boundAsPool = true }, () => drop(slot))
          }
        }
      })
    },
    openConnections: () => slots.filter((s) => s.client?.isConnected === true).length,
    close: async () => {
      closed = true
      for (const w of waiters.splice(0)) {
        clearTimeout(w.timer)
        w.reject(new LdapPoolError('the LDAP pool is closed'))
      }
      await Promise.all(slots.filter((s) => !s.busy).map(async (s) => {
        const client = s.client
        s.client = undefined
        await client?.unbind().catch(() => {})
      }))
    }
  }
}
