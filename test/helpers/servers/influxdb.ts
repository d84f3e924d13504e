/**
 * A real InfluxDB 1.x (Debian package `influxdb`, 1.6) for tests: `influxd` with a config file
 * generated in the temporary directory (meta, data and WAL there, usage reporting and the
 * `_internal` monitor store off), the HTTP API on 127.0.0.1:<free port>, a UDP listener on
 * 127.0.0.1:<free port> writing line protocol into the test database, and the RPC (backup)
 * service on a third free port, so that suites running in parallel do not clash on 8088.
 * Optionally with authentication and an admin user. The WAL is fsynced on every write, so a
 * restart, even after SIGKILL, finds every point a `/write` acknowledged.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SERVER_HOST, spawnServer, type ServerProcess } from './core.js'
import { findBinary } from './system.js'

const PACKAGE = 'influxdb'

/** influxd; throws {@link MissingServerError} naming `influxdb`. */
export function influxdbBinary (): string {
  return findBinary(['/usr/bin/influxd', 'influxd'], PACKAGE)
}

/** Options of {@link startInfluxdb}. */
export interface InfluxdbOptions {
  /** The database created at the first start, where the UDP listener writes (default `mqtt`). */
  database?: string
  /**
   * Turn authentication on (`auth-enabled`) with an admin user (all privileges) of this name
   * and {@link password}; the harness's own requests then send them.
   */
  user?: string
  /** The admin's password, with {@link user} (default random). */
  password?: string
  /**
   * The UDP listener's batch: points are written once this many arrived (default 100) or
   * {@link udpBatchTimeoutMs} passed since the first of them (default 50 ms; InfluxDB: 1 s).
   */
  udpBatchSize?: number
  udpBatchTimeoutMs?: number
}

/** One series of a query's answer, as InfluxDB's JSON gives it. */
export interface InfluxSeries {
  name: string
  tags?: Record<string, string>
  columns: string[]
  values: unknown[][]
}

/** A running InfluxDB 1.x with a test database. */
export interface InfluxdbServer extends ServerProcess {
  /** `http://127.0.0.1:<httpPort>` (the `/write`, `/query` and `/ping` API). */
  readonly url: string
  /** The HTTP API's port (= `port`). */
  readonly httpPort: number
  /** The UDP listener's port: line protocol datagrams written into {@link database}. */
  readonly udpPort: number
  /** The RPC (backup/restore) service's port, bound on loopback only. */
  readonly rpcPort: number
  readonly database: string
  /** With `user`: the admin's name and password (auth on); undefined without (auth off). */
  readonly user: string | undefined
  readonly password: string | undefined
  /**
   * Runs InfluxQL (`SELECT`, `SHOW`, `CREATE` ...) on {@link database} (or `opts.database`) over
   * `POST /query` and returns the series of its first statement ([] when it has none); a
   * statement's error is thrown.
   */
  query: (influxql: string, opts?: { database?: string, epoch?: 'ns' | 'u' | 'ms' | 's' }) => Promise<InfluxSeries[]>
  /** Writes line protocol over `POST /write` into {@link database} (`precision` default ns); resolves on 204. */
  write: (lineProtocol: string, opts?: { database?: string, precision?: 'ns' | 'u' | 'ms' | 's' }) => Promise<void>
}

const secret = (): string => randomBytes(12).toString('hex')
/** An InfluxQL identifier in double quotes. */
const influxName = (s: string): string => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`
/** A TOML basic string. */
const tomlString = (s: string): string => JSON.stringify(s)

/** True when a socket is bound to 127.0.0.1:`port` over UDP (Linux: /proc/net/udp). */
function udpBound (port: number): boolean {
  // local_address is `0100007F:<port hex>` for 127.0.0.1 (little-endian address, big-endian port)
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`
  return readFileSync('/proc/net/udp', 'utf8').split('\n').some((line) => line.trim().split(/\s+/)[1] === local)
}

/** Starts InfluxDB; see {@link InfluxdbServer}. */
export async function startInfluxdb (opts: InfluxdbOptions = {}): Promise<InfluxdbServer> {
  const bin = influxdbBinary()
  const database = opts.database ?? 'mqtt'
  const user = opts.user
  const password = user === undefined ? undefined : (opts.password ?? secret())
  const authorization = user === undefined
    ? {}
    : { authorization: 'Basic ' + Buffer.from(`${user}:${password as string}`).toString('base64') }

  /** One HTTP request to the API; throws with InfluxDB's error text on a status other than `ok`. */
  const request = async (port: number, path: string, body: string | URLSearchParams, ok: number, timeoutMs = 10_000): Promise<string> => {
    const response = await fetch(`http://${SERVER_HOST}:${port}${path}`, {
      method: 'POST',
      headers: { ...authorization, ...(typeof body === 'string' ? { 'content-type': 'text/plain' } : {}) },
      body,
      signal: AbortSignal.timeout(timeoutMs)
    })
    const text = await response.text()
    if (response.status !== ok) throw new Error(`InfluxDB ${path.split('?')[0]} answered ${response.status}: ${text.trim()}`)
    return text
  }
  const query = async (port: number, influxql: string, db: string | undefined, epoch?: string): Promise<InfluxSeries[]> => {
    const params = new URLSearchParams({ q: influxql, ...(db !== undefined ? { db } : {}), ...(epoch !== undefined ? { epoch } : {}) })
    const answer = JSON.parse(await request(port, '/query', params, 200)) as { results?: Array<{ error?: string, series?: InfluxSeries[] }>, error?: string }
    const first = answer.results?.[0]
    const error = answer.error ?? first?.error
    if (error !== undefined) throw new Error(`InfluxDB: ${error} (in ${influxql})`)
    return first?.series ?? []
  }

  const server = await spawnServer({
    name: 'InfluxDB',
    debianPackage: PACKAGE,
    portCount: 3, // HTTP, UDP, RPC
    // the config holds the ports, so it is written at each launch by `command`
    command: (ctx) => {
      const [http, udp, rpc] = ctx.ports
      ctx.writeFile('influxdb.conf', [
        'reporting-disabled = true',
        `bind-address = ${tomlString(`${ctx.host}:${rpc}`)}`,
        '[meta]',
        `  dir = ${tomlString(join(ctx.dir, 'meta'))}`,
        '[data]',
        `  dir = ${tomlString(join(ctx.dir, 'data'))}`,
        `  wal-dir = ${tomlString(join(ctx.dir, 'wal'))}`,
        '  wal-fsync-delay = "0s"',
        '  query-log-enabled = false',
        '  cache-max-memory-size = 67108864',
        '[monitor]',
        '  store-enabled = false',
        '[http]',
        `  bind-address = ${tomlString(`${ctx.host}:${http}`)}`,
        `  auth-enabled = ${String(user !== undefined)}`,
        '  log-enabled = false',
        '  pprof-enabled = false',
        '[[udp]]',
        '  enabled = true',
        `  bind-address = ${tomlString(`${ctx.host}:${udp}`)}`,
        `  database = ${tomlString(database)}`,
        `  batch-size = ${opts.udpBatchSize ?? 100}`,
        `  batch-timeout = "${opts.udpBatchTimeoutMs ?? 50}ms"`,
        '[continuous_queries]',
        '  enabled = false',
        '[logging]',
        '  level = "warn"',
        '  suppress-logo = true'
      ].join('\n') + '\n', 0o644)
      return [bin, 'run', '-config', join(ctx.dir, 'influxdb.conf'), '-pidfile', join(ctx.dir, 'influxd.pid')]
    },
    // /ping answers once the HTTP service is open; influxd opens its UDP listener after it, so
    // the probe also waits for that socket (read from /proc/net/udp): a datagram sent before it
    // would be lost without a trace
    probe: async (ctx, timeoutMs) => {
      const response = await fetch(`http://${ctx.host}:${ctx.port}/ping`, { signal: AbortSignal.timeout(timeoutMs) })
      await response.arrayBuffer()
      if (response.status !== 204) throw new Error(`/ping answered ${response.status}`)
      if (!udpBound(ctx.ports[1])) throw new Error(`the UDP listener on port ${ctx.ports[1]} is not open yet`)
    },
    firstStart: async (ctx) => {
      // with auth on and no user yet, InfluxDB allows exactly this statement without credentials
      if (user !== undefined) {
        await query(ctx.port, `CREATE USER ${influxName(user)} WITH PASSWORD '${(password as string).replace(/\\/g, '\\\\').replace(/'/g, "\\'")}' WITH ALL PRIVILEGES`, undefined)
      }
      await query(ctx.port, `CREATE DATABASE ${influxName(database)}`, undefined)
    }
  })
  return Object.assign(server, {
    url: `http://${server.host}:${server.port}`,
    httpPort: server.ports[0],
    udpPort: server.ports[1],
    rpcPort: server.ports[2],
    database,
    user,
    password,
    query: async (influxql: string, o: { database?: string, epoch?: 'ns' | 'u' | 'ms' | 's' } = {}) =>
      await query(server.port, influxql, o.database ?? database, o.epoch),
    write: async (lineProtocol: string, o: { database?: string, precision?: 'ns' | 'u' | 'ms' | 's' } = {}) => {
      const params = new URLSearchParams({ db: o.database ?? database, precision: o.precision ?? 'ns' })
      await request(server.port, `/write?${params.toString()}`, lineProtocol, 204)
    }
  })
}
