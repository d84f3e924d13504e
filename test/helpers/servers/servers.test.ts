/**
 * The real-server harness against the real servers: each is started once, answers its own
 * driver with the test credentials, refuses wrong ones, keeps its data across a clean stop and
 * across SIGKILL with a restart on the same port, and leaves no process behind.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { downAndBack } from './checks.js'
import {
  describeWithServer, pidAlive, postgresBinaries, spawnServer, startLdap, startMariadb, startPostgres, startRedis,
  MissingServerError, type LdapServer, type MariadbServer, type PostgresServer, type RedisServer
} from './index.js'

describe('the server harness core', () => {
  it('fails a start whose process exits, with its output, and removes its directory', async () => {
    const start = spawnServer({
      name: 'Broken',
      debianPackage: 'none',
      command: () => ['sh', '-c', 'echo the config is wrong >&2; exit 3'],
      probe: async () => { throw new Error('not yet') }
    })
    await expect(start).rejects.toThrow(/Broken on 127\.0\.0\.1:\d+ exited \(code 3\)[\s\S]*the config is wrong/)
    expect(readdirSync(tmpdir()).filter((name) => name.startsWith('st-broken-'))).toEqual([])
  })

  it('fails a start that never answers at the deadline and kills the process', async () => {
    const pidFile = join(mkdtempSync(join(tmpdir(), 'st-core-')), 'pid')
    process.env.STARLING_TEST_SERVER_TIMEOUT_MS = '300'
    try {
      const start = spawnServer({
        name: 'Silent',
        debianPackage: 'none',
        command: () => ['sh', '-c', `echo $$ > ${pidFile}; exec sleep 30`],
        probe: async () => { throw new Error('connection refused') }
      })
      await expect(start).rejects.toThrow(/did not answer within 300 ms.*last probe: connection refused/)
    } finally {
      delete process.env.STARLING_TEST_SERVER_TIMEOUT_MS
    }
    expect(pidAlive(Number(readFileSync(pidFile, 'utf8')))).toBe(false)
    rmSync(dirname(pidFile), { recursive: true })
  })

  it('retries a first start that could not bind on new ports', async () => {
    const tried: number[] = []
    const server = await spawnServer({
      name: 'Listener',
      debianPackage: 'none',
      command: (ctx) => {
        tried.push(ctx.port)
        return tried.length === 1
          ? ['sh', '-c', 'echo "bind: Address already in use" >&2; exit 1']
          : [process.execPath, '-e', `require('node:net').createServer().listen(${ctx.port}, '127.0.0.1')`]
      },
      probe: async (ctx) => await new Promise<void>((resolve, reject) => {
        const socket = connect(ctx.port, ctx.host, () => { socket.destroy(); resolve() }).on('error', reject)
      })
    })
    try {
      expect(tried).toHaveLength(2)
      expect(server.port).toBe(tried[1])
    } finally {
      await server.close()
    }
    expect(existsSync(server.dir)).toBe(false)
  })

  it('names the Debian package of a missing server', () => {
    process.env.STARLING_TEST_PG_BINDIR = '/nonexistent'
    try {
      expect(() => postgresBinaries()).toThrow(MissingServerError)
      expect(() => postgresBinaries()).toThrow(/install the Debian package `postgresql`/)
    } finally {
      delete process.env.STARLING_TEST_PG_BINDIR
    }
  })
})

describeWithServer('postgres', 'PostgreSQL', () => {
  let pg: PostgresServer
  beforeAll(async () => { pg = await startPostgres() })
  afterAll(async () => { await pg?.close() })

  it('answers the test user on its database over TCP', async () => {
    await pg.query('CREATE TABLE mqtt_user (username text PRIMARY KEY, password_hash text); INSERT INTO mqtt_user VALUES (\'u1\', \'h1\')')
    expect(await pg.query('SELECT password_hash FROM mqtt_user WHERE username = $1', ['u1'])).toEqual([{ password_hash: 'h1' }])
    const client = await pg.connect()
    try {
      expect((await client.query('SELECT current_user AS who')).rows[0].who).toBe(pg.user)
    } finally {
      await client.end()
    }
    console.log(`PostgreSQL started in ${pg.startedInMs} ms`)
  })

  it('checks passwords on TCP', async () => {
    const { default: driver } = await import('pg')
    const client = new driver.Client({ host: pg.host, port: pg.port, user: pg.user, password: 'wrong', database: pg.database })
    await expect(client.connect()).rejects.toThrow(/password authentication failed/)
    await client.end().catch(() => {})
  })

  it('stores md5 passwords and checks md5 logins on request', async () => {
    const md5 = await startPostgres({ authMethod: 'md5', user: 'md5user', password: 'md5-secret' })
    try {
      const admin = await md5.connect({ admin: true })
      try {
        const { rows } = await admin.query('SELECT passwd FROM pg_shadow WHERE usename = $1', ['md5user'])
        expect(rows[0].passwd).toMatch(/^md5[0-9a-f]{32}$/)
      } finally {
        await admin.end()
      }
      expect(await md5.query('SELECT current_user AS who')).toEqual([{ who: 'md5user' }])
    } finally {
      await md5.close()
    }
  })

  it('keeps its data across a stop and a SIGKILL, on the same port', async () => {
    await downAndBack(pg, 'stop')
    expect(await pg.query('SELECT count(*)::int AS n FROM mqtt_user')).toEqual([{ n: 1 }])
    await pg.query('INSERT INTO mqtt_user VALUES ($1, $2)', ['u2', 'h2'])
    await downAndBack(pg, 'kill')
    expect(await pg.query('SELECT count(*)::int AS n FROM mqtt_user')).toEqual([{ n: 2 }])
  })
})

describeWithServer('mariadb', 'MariaDB', () => {
  let db: MariadbServer
  beforeAll(async () => { db = await startMariadb() })
  afterAll(async () => { await db?.close() })

  it('answers the test user on its database over TCP', async () => {
    await db.query('CREATE TABLE mqtt_user (username VARCHAR(100) PRIMARY KEY, password_hash VARCHAR(100)); INSERT INTO mqtt_user VALUES (\'u1\', \'h1\')')
    expect(await db.query('SELECT password_hash FROM mqtt_user WHERE username = ?', ['u1'])).toEqual([{ password_hash: 'h1' }])
    const admin = await db.connect({ admin: true })
    try {
      const [rows] = await admin.query('SELECT user FROM mysql.user WHERE user = ?', [db.user])
      expect(rows).toEqual([{ User: db.user }])
    } finally {
      await admin.end()
    }
    console.log(`MariaDB started in ${db.startedInMs} ms`)
  })

  it('checks passwords on TCP', async () => {
    const { default: mysql } = await import('mysql2/promise')
    await expect(mysql.createConnection({ host: db.host, port: db.port, user: db.user, password: 'wrong' })).rejects.toThrow(/Access denied/)
  })

  it('keeps its data across a stop and a SIGKILL, on the same port', async () => {
    await downAndBack(db, 'stop')
    expect(await db.query('SELECT count(*) AS n FROM mqtt_user')).toEqual([{ n: 1 }])
    await db.query('INSERT INTO mqtt_user VALUES (?, ?)', ['u2', 'h2'])
    await downAndBack(db, 'kill')
    expect(await db.query('SELECT count(*) AS n FROM mqtt_user')).toEqual([{ n: 2 }])
  })
})

describeWithServer('redis', 'Redis', () => {
  let redis: RedisServer
  beforeAll(async () => { redis = await startRedis({ password: 'redis-secret' }) })
  afterAll(async () => { await redis?.close() })

  it('answers commands with the password', async () => {
    expect(await redis.command('HSET', 'mqtt_user:u1', 'password', 'p1')).toBe(1)
    const client = await redis.connect()
    try {
      expect(await client.hget('mqtt_user:u1', 'password')).toBe('p1')
    } finally {
      client.disconnect()
    }
    console.log(`Redis started in ${redis.startedInMs} ms`)
  })

  it('refuses a client without the password', async () => {
    // RESP2: ioredis 6 opens with HELLO 3, which an unauthenticated client sees refused at once
    const { Redis } = await import('ioredis')
    const client = new Redis({ host: redis.host, port: redis.port, lazyConnect: true, protocol: 2, enableReadyCheck: false, retryStrategy: () => null, maxRetriesPerRequest: 0 })
    client.on('error', () => {})
    try {
      await client.connect()
      await expect(client.get('mqtt_user:u1')).rejects.toThrow(/NOAUTH/)
    } finally {
      client.disconnect()
    }
  })

  it('keeps its data across a stop and a SIGKILL, on the same port', async () => {
    await downAndBack(redis, 'stop')
    expect(await redis.command('HGET', 'mqtt_user:u1', 'password')).toBe('p1')
    await redis.command('HSET', 'mqtt_user:u2', 'password', 'p2')
    await downAndBack(redis, 'kill')
    expect(await redis.command('HGET', 'mqtt_user:u2', 'password')).toBe('p2')
  })
})

describeWithServer('ldap', 'OpenLDAP', () => {
  let ldap: LdapServer
  beforeAll(async () => { ldap = await startLdap({ tls: true }) })
  afterAll(async () => {
    const dir = ldap?.dir
    await ldap?.close()
    if (dir !== undefined) expect(existsSync(dir)).toBe(false)
  })

  const USERS = [
    'dn: ou=testdevice,dc=emqx,dc=io', 'objectClass: organizationalUnit', 'ou: testdevice', '',
    'dn: uid=mqttuser0001,ou=testdevice,dc=emqx,dc=io', 'objectClass: inetOrgPerson', 'uid: mqttuser0001',
    'cn: mqttuser0001', 'sn: mqttuser0001', 'userPassword: mqttuser0001', ''
  ].join('\n')

  it('adds LDIF entries and finds them as the root DN', async () => {
    await ldap.addLdif(USERS)
    const found = await ldap.search('(uid=mqttuser0001)')
    expect(found.map((e) => e.dn)).toEqual(['uid=mqttuser0001,ou=testdevice,dc=emqx,dc=io'])
    console.log(`OpenLDAP (with ldaps) started in ${ldap.startedInMs} ms`)
  })

  it('binds an entry with its password, and over ldaps with the certificate it made', async () => {
    const { Client, InvalidCredentialsError } = await import('ldapts')
    const plain = new Client({ url: ldap.url })
    try {
      await plain.bind('uid=mqttuser0001,ou=testdevice,dc=emqx,dc=io', 'mqttuser0001')
      await expect(plain.bind('uid=mqttuser0001,ou=testdevice,dc=emqx,dc=io', 'wrong')).rejects.toThrow(InvalidCredentialsError)
    } finally {
      await plain.unbind()
    }
    const secure = new Client({ url: ldap.ldapsUrl as string, tlsOptions: { ca: ldap.caCert } })
    try {
      await secure.bind(ldap.bindDn, ldap.password)
    } finally {
      await secure.unbind()
    }
  })

  it('keeps its data across a stop and a SIGKILL, on the same port', async () => {
    await downAndBack(ldap, 'stop')
    expect(await ldap.search('(uid=mqttuser0001)')).toHaveLength(1)
    await downAndBack(ldap, 'kill')
    expect(await ldap.search('(ou=testdevice)')).toHaveLength(1)
  })
})
