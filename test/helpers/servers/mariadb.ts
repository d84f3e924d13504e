/**
 * A real MariaDB (Debian package `mariadb-server`) for tests: mariadb-install-db in a temporary
 * directory, `mariadbd` on 127.0.0.1:<free port> with its socket in that directory, and a test
 * user with a password (mysql_native_password) granted everything on a test database, as the
 * product's auth backend connects. `root` has no password and logs in on the socket only.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import mysql from 'mysql2/promise'
import { makeTestCa, makeTestCert, opensslBinary } from './certs.js'
import { SERVER_HOST, spawnServer, type ServerProcess } from './core.js'
import { findBinary } from './system.js'

const PACKAGE = 'mariadb-server'

/** The MariaDB programs the harness runs. */
export interface MariadbBinaries { installDb: string, server: string }

/** mariadb-install-db and mariadbd (or their mysql names); throws {@link MissingServerError} naming `mariadb-server`. */
export function mariadbBinaries (): MariadbBinaries {
  return {
    installDb: findBinary(['mariadb-install-db', 'mysql_install_db'], PACKAGE),
    server: findBinary(['/usr/sbin/mariadbd', '/usr/sbin/mysqld', 'mariadbd', 'mysqld'], PACKAGE)
  }
}

/** Options of {@link startMariadb}. */
export interface MariadbOptions {
  /** The test user (default `starling`), `'starling'@'%'`. */
  user?: string
  /** Its password (default random). */
  password?: string
  /** The database it is granted (default `mqtt`). */
  database?: string
  /**
   * Also accept TLS (`ssl-ca`, `ssl-cert`, `ssl-key`) with a certificate for `127.0.0.1` and
   * `localhost` signed by a CA made for this server with the `openssl` CLI (`caCertFile`); the
   * harness's own TCP connections then use TLS and check it.
   */
  tls?: boolean
  /** With `tls`: refuse TCP connections without TLS (`require_secure_transport = ON`; the socket stays open to root). */
  requireTls?: boolean
}

/** A running MariaDB with a test user and database. */
export interface MariadbServer extends ServerProcess {
  readonly user: string
  readonly password: string
  readonly database: string
  /** `mysql://user:password@127.0.0.1:port/database` */
  readonly url: string
  /** Its Unix socket, where `root` logs in without a password. */
  readonly socketPath: string
  /** With `tls`: the CA certificate (PEM) that signed the server's, and its file; undefined without. */
  readonly caCert: string | undefined
  readonly caCertFile: string | undefined
  /**
   * A mysql2 connection (multiple statements allowed) as the test user on the test database,
   * or as root on the socket; the caller ends it.
   */
  connect: (opts?: { admin?: boolean }) => Promise<mysql.Connection>
  /** Runs `sql` as the test user on the test database and returns what mysql2 returns (rows, or a result header). */
  query: <R = any>(sql: string, params?: unknown[]) => Promise<R>
}

const secret = (): string => randomBytes(12).toString('hex')
const sqlString = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`
const sqlName = (s: string): string => '`' + s.replace(/`/g, '``') + '`'

/** Starts MariaDB; see {@link MariadbServer}. As root it runs as the `mysql` account. */
export async function startMariadb (opts: MariadbOptions = {}): Promise<MariadbServer> {
  const bin = mariadbBinaries()
  const user = opts.user ?? 'starling'
  const password = opts.password ?? secret()
  const database = opts.database ?? 'mqtt'
  if (opts.requireTls === true && opts.tls !== true) throw new Error('startMariadb: requireTls needs tls: true')
  if (opts.tls === true) opensslBinary() // missing: MissingServerError naming openssl, before mariadb-install-db
  let caCert: string | undefined
  const connection = async (port: number, socketPath: string, asAdmin: boolean, timeoutMs = 10_000): Promise<mysql.Connection> => {
    const c = await mysql.createConnection(asAdmin
      ? { socketPath, user: 'root', multipleStatements: true, connectTimeout: timeoutMs }
      : {
          host: SERVER_HOST, port, user, password, database, multipleStatements: true, connectTimeout: timeoutMs,
          ssl: caCert === undefined ? undefined : { ca: caCert, rejectUnauthorized: true }
        })
    c.on('error', () => {}) // a server stopped under an idle connection: the query in flight rejects
    return c
  }
  const socketOf = (dir: string): string => join(dir, 'mysqld.sock')
  // InnoDB sized for a test: small log and pool (the default log alone is 96 MB); no io_uring,
  // which some container runtimes refuse
  const innodb = ['--innodb-log-file-size=4M', '--innodb-buffer-pool-size=16M', '--innodb-use-native-aio=0', '--innodb-flush-log-at-trx-commit=2']
  const server = await spawnServer({
    name: 'MariaDB',
    debianPackage: PACKAGE,
    systemUser: 'mysql',
    setup: async (ctx) => {
      await ctx.run([bin.installDb, '--no-defaults', `--datadir=${join(ctx.dir, 'data')}`,
        '--auth-root-authentication-method=normal', '--skip-test-db', '--skip-name-resolve', ...innodb])
      // run at every start, before the server accepts connections: so the first probe is
      // already the test user's own login (idempotent, a restart keeps what tests changed)
      ctx.writeFile('init.sql', [
        `CREATE USER IF NOT EXISTS ${sqlString(user)}@'%' IDENTIFIED BY ${sqlString(password)};`,
        `CREATE DATABASE IF NOT EXISTS ${sqlName(database)};`,
        `GRANT ALL ON ${sqlName(database)}.* TO ${sqlString(user)}@'%';`
      ].join('\n') + '\n')
      if (opts.tls === true) {
        const run = async (argv: readonly string[]): Promise<string> => await ctx.run(argv)
        const ca = await makeTestCa(ctx.dir, 'ca', 'Starling test MariaDB CA', run)
        await makeTestCert(ctx.dir, ca, 'server', { run })
        caCert = ca.cert
      }
    },
    command: (ctx) => [bin.server, '--no-defaults', `--datadir=${join(ctx.dir, 'data')}`,
      `--socket=${socketOf(ctx.dir)}`, `--port=${ctx.port}`, `--bind-address=${ctx.host}`,
      `--pid-file=${join(ctx.dir, 'mysqld.pid')}`, `--tmpdir=${ctx.dir}`, '--skip-name-resolve',
      `--init-file=${join(ctx.dir, 'init.sql')}`, ...innodb,
      ...(opts.tls === true
        ? [`--ssl-ca=${join(ctx.dir, 'ca.pem')}`, `--ssl-cert=${join(ctx.dir, 'server.pem')}`, `--ssl-key=${join(ctx.dir, 'server-key.pem')}`]
        : []),
      ...(opts.requireTls === true ? ['--require-secure-transport=ON'] : [])],
    probe: async (ctx, timeoutMs) => {
      const c = await connection(ctx.port, socketOf(ctx.dir), false, timeoutMs)
      try {
        await c.query('SELECT 1')
      } finally {
        c.destroy()
      }
    }
  })
  const socketPath = socketOf(server.dir)
  return Object.assign(server, {
    user,
    password,
    database,
    url: `mysql://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${server.host}:${server.port}/${encodeURIComponent(database)}`,
    socketPath,
    caCert,
    caCertFile: caCert === undefined ? undefined : join(server.dir, 'ca.pem'),
    connect: async (o: { admin?: boolean } = {}) => await connection(server.port, socketPath, o.admin === true),
    query: async <R = any>(sql: string, params?: unknown[]) => {
      const c = await connection(server.port, socketPath, false)
      try {
        const [result] = await c.query(sql, params)
        return result as R
      } finally {
        await c.end().catch(() => c.destroy())
      }
    }
  })
}
