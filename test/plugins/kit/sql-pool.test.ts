/**
 * The SQL pools' own logic: TLS options from EMQ X's ssl.* keys, server addresses, and a pool
 * whose server is not there (created without connecting, failing fast, probe false, closable).
 * Against real servers they are exercised by test/e2e/auth-mysql.test.ts and auth-pgsql.test.ts.
 */
import { tlsConnectOptions, type SqlPoolOptions } from '../../../plugins/kit/pools/index.js'
import { createMysqlPool } from '../../../plugins/kit/pools/mysql.js'
import { createPgsqlPool } from '../../../plugins/kit/pools/pgsql.js'
import { parseServer } from '../../../plugins/auth/sql/sql-backend.js'
import { freePort } from '../../helpers/node.js'

describe('tlsConnectOptions', () => {
  it('maps verify, the name check and tls_versions onto tls.connect options', () => {
    const plain = tlsConnectOptions({ verify: false }, '127.0.0.1')
    expect(plain.rejectUnauthorized).toBe(false)
    expect(plain.servername).toBeUndefined() // no SNI for an IP address
    const named = tlsConnectOptions({ verify: true, serverName: 'db.example.com', versions: ['tlsv1.3', 'tlsv1.2'] }, '10.0.0.1')
    expect(named).toMatchObject({ rejectUnauthorized: true, servername: 'db.example.com', minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' })
    expect(typeof named.checkServerIdentity).toBe('function')
    const off = tlsConnectOptions({ verify: true, serverName: 'disable' }, 'db')
    expect((off.checkServerIdentity as () => unknown)()).toBeUndefined()
  })

  it('refuses a certificate file it cannot read', () => {
    expect(() => tlsConnectOptions({ verify: true, cacertfile: '/nonexistent/ca.pem' }, 'db')).toThrow(/ENOENT/)
  })
})

describe('parseServer', () => {
  it('reads host:port, [v6]:port and a host alone', () => {
    expect(parseServer('db:3307', 'k', 3306)).toEqual({ host: 'db', port: 3307 })
    expect(parseServer('[::1]:5433', 'k', 5432)).toEqual({ host: '::1', port: 5433 })
    expect(parseServer('db.example.com', 'k', 5432)).toEqual({ host: 'db.example.com', port: 5432 })
    expect(() => parseServer('db:99999', 'auth.mysql.server', 3306)).toThrow(/auth\.mysql\.server/)
  })
})

describe.each([['mysql', createMysqlPool], ['pgsql', createPgsqlPool]] as const)('the %s pool with no server', (_name, create) => {
  it('is created without connecting, fails a query fast, probes false and closes', async () => {
    const port = await freePort()
    const opts: SqlPoolOptions = { host: '127.0.0.1', port, user: 'u', password: 'p', database: 'd', size: 2, connectTimeoutMs: 2000, queryTimeoutMs: 1000 }
    const pool = create(opts)
    const start = Date.now()
    await expect(pool.query('SELECT 1', [])).rejects.toThrow()
    expect(Date.now() - start).toBeLessThan(1000)
    expect(await pool.probe(500)).toBe(false)
    await pool.close()
    await expect(pool.query('SELECT 1', [])).rejects.toThrow(/closed/)
  })
})
