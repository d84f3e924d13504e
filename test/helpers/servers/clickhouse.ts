/**
 * A real ClickHouse (Debian package `clickhouse-server`, 18.16) for tests: `clickhouse-server`
 * with a config and users file generated in the temporary directory (data, tmp and user files
 * there, log to the console), its HTTP interface, native TCP port and interserver port each on a
 * free 127.0.0.1 port, and a test user with a password on a test database, as the product's
 * ClickHouse action connects with the official client `@clickhouse/client` (HTTP).
 *
 * 18.16 is older than the client supports officially; what works and what does not is in
 * docs/testing.md (inserts in JSONEachRow and selects do; server-side query parameters,
 * `{name:Type}`, do not: the server refuses `param_<name>` as an unknown setting).
 */
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { SERVER_HOST, spawnServer, type ServerProcess } from './core.js'
import { findBinary } from './system.js'

const PACKAGE = 'clickhouse-server'

/** clickhouse-server; throws {@link MissingServerError} naming `clickhouse-server`. */
export function clickhouseBinary (): string {
  return findBinary(['/usr/sbin/clickhouse-server', 'clickhouse-server'], PACKAGE)
}

/** Options of {@link startClickhouse}. */
export interface ClickhouseOptions {
  /** The test user (default `starling`). */
  user?: string
  /** Its password (default random). */
  password?: string
  /** The database created at the first start (default `mqtt`). */
  database?: string
}

/** A running ClickHouse with a test user and database. */
export interface ClickhouseServer extends ServerProcess {
  /** `http://127.0.0.1:<httpPort>`: the HTTP interface, what `@clickhouse/client`'s `url` takes. */
  readonly url: string
  /** The HTTP interface's port (= `port`). */
  readonly httpPort: number
  /** The native protocol's port (clickhouse-client). */
  readonly tcpPort: number
  readonly user: string
  readonly password: string
  readonly database: string
  /** A `@clickhouse/client` client as the test user on the test database; the caller closes it. */
  client: () => ClickHouseClient
  /** Runs one statement; a `SELECT` resolves with its rows (JSONEachRow), anything else with []. */
  query: <R = Record<string, unknown>>(sql: string) => Promise<R[]>
  /** Inserts rows into `table` of the test database (JSONEachRow). */
  insert: (table: string, rows: ReadonlyArray<Record<string, unknown>>) => Promise<void>
}

const secret = (): string => randomBytes(12).toString('hex')
const xmlText = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
const sqlName = (s: string): string => '`' + s.replace(/\\/g, '\\\\').replace(/`/g, '\\`') + '`'

/** Starts ClickHouse; see {@link ClickhouseServer}. */
export async function startClickhouse (opts: ClickhouseOptions = {}): Promise<ClickhouseServer> {
  const bin = clickhouseBinary()
  const user = opts.user ?? 'starling'
  const password = opts.password ?? secret()
  const database = opts.database ?? 'mqtt'
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(user)) throw new Error(`startClickhouse: user must be an XML element name, not ${user}`)
  const client = (port: number, db: string, timeoutMs = 10_000): ClickHouseClient => createClient({
    url: `http://${SERVER_HOST}:${port}`,
    username: user,
    password,
    database: db,
    request_timeout: timeoutMs,
    // its own log would print every refused probe; the error reaches the caller anyway
    log: { level: ClickHouseLogLevel.OFF }
  })
  /** Runs `fn` with a fresh client and always closes it. */
  const withClient = async <T>(c: ClickHouseClient, fn: (c: ClickHouseClient) => Promise<T>): Promise<T> => {
    try {
      return await fn(c)
    } finally {
      await c.close()
    }
  }

  const server = await spawnServer({
    name: 'ClickHouse',
    debianPackage: PACKAGE,
    portCount: 3, // HTTP, native TCP, interserver HTTP
    setup: async (ctx) => {
      // the test user, from 127.0.0.1 only; `default` (needed by the server) without a
      // password and from nowhere
      ctx.writeFile('users.xml', `<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <quotas><default></default></quotas>
  <users>
    <default><password></password><networks><ip>::1/128</ip></networks><profile>default</profile><quota>default</quota></default>
    <${user}><password>${xmlText(password)}</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></${user}>
  </users>
</yandex>
`)
    },
    // the config holds the ports, so it is written at each launch by `command`
    command: (ctx) => {
      const [http, tcp, interserver] = ctx.ports
      const path = (name: string): string => xmlText(join(ctx.dir, name) + '/')
      ctx.writeFile('config.xml', `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><console>1</console></logger>
  <listen_host>${ctx.host}</listen_host>
  <http_port>${http}</http_port>
  <tcp_port>${tcp}</tcp_port>
  <interserver_http_port>${interserver}</interserver_http_port>
  <interserver_http_host>${ctx.host}</interserver_http_host>
  <path>${path('data')}</path>
  <tmp_path>${path('tmp')}</tmp_path>
  <user_files_path>${path('user_files')}</user_files_path>
  <format_schema_path>${path('format_schemas')}</format_schema_path>
  <users_config>${xmlText(join(ctx.dir, 'users.xml'))}</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>16777216</mark_cache_size>
  <uncompressed_cache_size>16777216</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
</yandex>
`)
      return [bin, `--config-file=${join(ctx.dir, 'config.xml')}`]
    },
    // the HTTP interface opens after the tables are loaded: a query as the test user is a ready server
    probe: async (ctx, timeoutMs) => {
      await withClient(client(ctx.port, 'default', timeoutMs), async (c) => await (await c.query({ query: 'SELECT 1', format: 'JSONEachRow' })).json())
    },
    firstStart: async (ctx) => {
      await withClient(client(ctx.port, 'default'), async (c) => await c.command({ query: `CREATE DATABASE IF NOT EXISTS ${sqlName(database)}` }))
    }
  })
  return Object.assign(server, {
    url: `http://${server.host}:${server.port}`,
    httpPort: server.ports[0],
    tcpPort: server.ports[1],
    user,
    password,
    database,
    client: () => client(server.port, database),
    query: async <R = Record<string, unknown>>(sql: string): Promise<R[]> => await withClient(client(server.port, database), async (c) => {
      if (!/^\s*(SELECT|SHOW|DESCRIBE|DESC|EXISTS|WITH)\b/i.test(sql)) {
        await c.command({ query: sql })
        return []
      }
      return await (await c.query({ query: sql, format: 'JSONEachRow' })).json<R>()
    }),
    insert: async (table: string, rows: ReadonlyArray<Record<string, unknown>>): Promise<void> => {
      await withClient(client(server.port, database), async (c) => { await c.insert({ table, values: [...rows], format: 'JSONEachRow' }) })
    }
  })
}
