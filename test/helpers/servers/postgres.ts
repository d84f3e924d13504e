/**
 * A real PostgreSQL (Debian package `postgresql`) for tests: initdb in a temporary directory,
 * `postgres` on 127.0.0.1:<free port> with its Unix socket in that directory, a superuser
 * `postgres` and a test user owning a test database, both with passwords checked on TCP
 * (scram-sha-256 by default, md5 on request), as the product's auth backend connects.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { makeTestCa, makeTestCert, opensslBinary } from './certs.js'
import { SERVER_HOST, spawnServer, type ServerProcess } from './core.js'
import { MissingServerError } from './system.js'

const PACKAGE = 'postgresql'

/** The PostgreSQL programs the harness runs. */
export interface PostgresBinaries { initdb: string, postgres: string }

/**
 * initdb and postgres from `STARLING_TEST_PG_BINDIR`, or the newest
 * /usr/lib/postgresql/<version>/bin; throws {@link MissingServerError} naming `postgresql`.
 */
export function postgresBinaries (): PostgresBinaries {
  const root = '/usr/lib/postgresql'
  const folders = process.env.STARLING_TEST_PG_BINDIR
    ? [process.env.STARLING_TEST_PG_BINDIR]
    : (existsSync(root) ? readdirSync(root) : [])
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
        .map((v) => join(root, v, 'bin'))
  const bin = folders.find((f) => existsSync(join(f, 'initdb')) && existsSync(join(f, 'postgres')))
  if (bin === undefined) throw new MissingServerError(`PostgreSQL (initdb and postgres under ${root}/<version>/bin)`, PACKAGE)
  return { initdb: join(bin, 'initdb'), postgres: join(bin, 'postgres') }
}

/** Options of {@link startPostgres}. */
export interface PostgresOptions {
  /** The test user (default `starling`). */
  user?: string
  /** Its password (default random). */
  password?: string
  /** The database it owns (default `mqtt`). */
  database?: string
  /** How TCP logins are checked, and how passwords are stored (default `scram-sha-256`). */
  authMethod?: 'scram-sha-256' | 'md5'
  /**
   * Also accept TLS (`ssl = on`) with a certificate for `127.0.0.1` and `localhost` signed by a
   * CA made for this server with the `openssl` CLI (`caCertFile`); the harness's own clients
   * then connect over TLS and check it.
   */
  tls?: boolean
  /** With `tls`: refuse TCP logins without TLS (`hostssl` lines in pg_hba.conf). */
  requireTls?: boolean
}

/** A running PostgreSQL with a test user and database. */
export interface PostgresServer extends ServerProcess {
  readonly user: string
  readonly password: string
  readonly database: string
  /** `postgres://user:password@127.0.0.1:port/database` */
  readonly url: string
  /** The superuser (`postgres`) and its password, for what the test user may not do. */
  readonly admin: { readonly user: string, readonly password: string }
  /** The folder of its Unix socket (local logins are trusted). */
  readonly socketDir: string
  /** With `tls`: the CA certificate (PEM) that signed the server's, and its file; undefined without. */
  readonly caCert: string | undefined
  readonly caCertFile: string | undefined
  /** A connected pg client, as the test user on the test database (or as the superuser); the caller ends it. */
  connect: (opts?: { admin?: boolean }) => Promise<pg.Client>
  /**
   * Runs `sql` as the test user on the test database and returns its rows; without `params`
   * it may hold several statements (seed scripts).
   */
  query: <R extends Record<string, any> = Record<string, any>>(sql: string, params?: unknown[]) => Promise<R[]>
}

const secret = (): string => randomBytes(12).toString('hex')

/** Starts PostgreSQL; see {@link PostgresServer}. As root it runs as the `postgres` account. */
export async function startPostgres (opts: PostgresOptions = {}): Promise<PostgresServer> {
  const bin = postgresBinaries()
  const user = opts.user ?? 'starling'
  const password = opts.password ?? secret()
  const database = opts.database ?? 'mqtt'
  const authMethod = opts.authMethod ?? 'scram-sha-256'
  const admin = { user: 'postgres', password: secret() }
  if (opts.requireTls === true && opts.tls !== true) throw new Error('startPostgres: requireTls needs tls: true')
  if (opts.tls === true) opensslBinary() // missing: MissingServerError naming openssl, before initdb
  let caCert: string | undefined
  const client = (port: number, asAdmin: boolean, timeoutMs = 10_000): pg.Client => new pg.Client({
    host: SERVER_HOST,
    port,
    user: asAdmin ? admin.user : user,
    password: asAdmin ? admin.password : password,
    database: asAdmin ? 'postgres' : database,
    connectionTimeoutMillis: timeoutMs,
    ssl: caCert === undefined ? false : { ca: caCert, rejectUnauthorized: true }
  })
  /** Runs `fn` on a fresh connection and always ends it. */
  const withClient = async <T>(c: pg.Client, fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    c.on('error', () => {}) // a server stopped under an idle client: the query in flight rejects
    try {
      await c.connect()
      return await fn(c)
    } finally {
      await c.end().catch(() => {})
    }
  }
  const server = await spawnServer({
    name: 'PostgreSQL',
    debianPackage: PACKAGE,
    systemUser: 'postgres',
    stopSignal: 'SIGINT', // fast shutdown: SIGTERM would wait for every client to leave
    setup: async (ctx) => {
      const pwfile = ctx.writeFile('superuser-password', admin.password + '\n')
      await ctx.run([bin.initdb, '-D', join(ctx.dir, 'data'), '-U', admin.user, `--pwfile=${pwfile}`,
        '--auth-local=trust', `--auth-host=${authMethod}`, '-E', 'UTF8', '--no-locale', '--no-sync'])
      unlinkSync(pwfile)
      if (opts.tls === true) {
        const run = async (argv: readonly string[]): Promise<string> => await ctx.run(argv)
        const ca = await makeTestCa(ctx.dir, 'ca', 'Starling test PostgreSQL CA', run)
        await makeTestCert(ctx.dir, ca, 'server', { run })
        caCert = ca.cert
        if (opts.requireTls === true) {
          const hba = join(ctx.dir, 'data', 'pg_hba.conf')
          writeFileSync(hba, readFileSync(hba, 'utf8').replace(/^host(\s)/gm, 'hostssl$1'))
        }
      }
    },
    command: (ctx) => [bin.postgres, '-D', join(ctx.dir, 'data'), '-p', String(ctx.port), '-k', ctx.dir,
      '-c', `listen_addresses=${ctx.host}`, '-c', `password_encryption=${authMethod}`,
      // no fsync: what a test writes must survive the server's crash (SIGKILL), not the
      // machine's; synchronous_commit stays on, or a commit could be lost with the WAL buffers
      '-c', 'fsync=off', '-c', 'full_page_writes=off', '-c', 'shared_buffers=16MB',
      ...(opts.tls === true
        ? ['-c', 'ssl=on', '-c', `ssl_cert_file=${join(ctx.dir, 'server.pem')}`, '-c', `ssl_key_file=${join(ctx.dir, 'server-key.pem')}`,
            '-c', `ssl_ca_file=${join(ctx.dir, 'ca.pem')}`]
        : [])],
    probe: async (ctx, timeoutMs) => { await withClient(client(ctx.port, true, timeoutMs), async (c) => await c.query('SELECT 1')) },
    firstStart: async (ctx) => {
      await withClient(client(ctx.port, true), async (c) => {
        await c.query(`CREATE ROLE ${c.escapeIdentifier(user)} LOGIN PASSWORD ${c.escapeLiteral(password)}`)
        await c.query(`CREATE DATABASE ${c.escapeIdentifier(database)} OWNER ${c.escapeIdentifier(user)}`)
      })
    }
  })
  return Object.assign(server, {
    user,
    password,
    database,
    url: `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${server.host}:${server.port}/${encodeURIComponent(database)}`,
    admin,
    socketDir: server.dir,
    caCert,
    caCertFile: caCert === undefined ? undefined : join(server.dir, 'ca.pem'),
    connect: async (o: { admin?: boolean } = {}) => {
      const c = client(server.port, o.admin === true)
      await c.connect()
      return c
    },
    query: async <R extends Record<string, any>>(sql: string, params?: unknown[]) =>
      await withClient(client(server.port, false), async (c) => {
        // several statements answer with one result each: the last one's rows
        const result: pg.QueryResult<R> | Array<pg.QueryResult<R>> = await c.query<R>(sql, params)
        return Array.isArray(result) ? (result.at(-1)?.rows ?? []) : result.rows
      })
  })
}
