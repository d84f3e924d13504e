/**
 * svc_auth_mongo against a real MongoDB, with real mqtt.js clients. MongoDB has no Debian
 * package, so the harness cannot start one: this suite runs only when TEST_MONGO_URL points
 * at a server the test may write to (a fresh database `starling_test_<pid>` is created and
 * dropped), e.g. TEST_MONGO_URL=mongodb://127.0.0.1:27017. Without it the suite is skipped
 * with a note; the selector and document mapping is unit-tested in test/plugins/auth/mongo.
 */
import { MongoClient } from 'mongodb'
import { closeClients, connect, type TestNode } from '../helpers/node.js'
import { closeOpened, pubackCode, suback } from '../helpers/mqtt.js'
import { QUERY_INJECTIONS, expectNeverAuthenticated, refusedCode, startBackendNode, type BackendNode } from '../helpers/auth-backend.js'
import { computePasswordHash, parsePasswordHash } from '../../plugins/auth/backend/index.js'

const URL_ = process.env.TEST_MONGO_URL
const PLUGIN = 'svc_auth_mongo'
if (URL_ === undefined) console.warn('skipping "svc_auth_mongo (real MongoDB)": set TEST_MONGO_URL (mongodb://host:port) to run it; MongoDB has no Debian package for the harness')

;(URL_ === undefined ? describe.skip : describe)('svc_auth_mongo (real MongoDB)', () => {
  let mongo: MongoClient
  let backend: BackendNode
  let node: TestNode
  const database = `starling_test_${process.pid}`

  beforeAll(async () => {
    mongo = new MongoClient(URL_!)
    const db = mongo.db(database)
    const hash = (pw: string): string => computePasswordHash(parsePasswordHash('sha256', 'k').spec, Buffer.from(pw), undefined)!
    await db.collection('mqtt_user').insertMany([
      { username: 'alice', password: hash('wonderland'), is_superuser: false },
      { username: 'root', password: hash('toor'), is_superuser: true }
    ])
    await db.collection('mqtt_acl').insertOne({ username: 'alice', publish: ['pub/%u'], subscribe: ['sub/#'], pubsub: ['both'] })
    const url = new URL(URL_!)
    backend = await startBackendNode(PLUGIN, { allow_anonymous: 'false' })
    node = backend.node
    await backend.load({
      'auth.mongo.server': url.host,
      'auth.mongo.database': database,
      'auth.mongo.login': decodeURIComponent(url.username),
      'auth.mongo.password': decodeURIComponent(url.password),
      'auth.mongo.timeout': '2s',
      'auth.mongo.query_timeout': '2s'
    })
  })
  afterAll(async () => {
    await closeClients()
    await closeOpened()
    await backend?.destroy()
    await mongo?.db(database).dropDatabase().catch(() => {})
    await mongo?.close()
  })

  it('accepts, refuses a wrong password (0x86 / 4), ignores an unknown user (0x87)', async () => {
    await connect(node, { protocolVersion: 4, username: 'alice', password: 'wonderland' })
    await connect(node, { protocolVersion: 5, username: 'alice', password: 'wonderland' })
    expect(await refusedCode(node, { protocolVersion: 5, username: 'alice', password: 'no' })).toBe(0x86)
    expect(await refusedCode(node, { protocolVersion: 4, username: 'alice', password: 'no' })).toBe(4)
    expect(await refusedCode(node, { protocolVersion: 5, username: 'stranger', password: 'x' })).toBe(0x87)
  })

  it('applies the ACL documents and lets a superuser bypass them', async () => {
    const alice = await connect(node, { protocolVersion: 5, username: 'alice', password: 'wonderland' })
    expect(await suback(alice, ['sub/x', 'both', 'pub/alice'])).toEqual([1, 1, 0x80])
    expect(await pubackCode(alice, 'pub/alice')).toBe(0)
    expect(await pubackCode(alice, 'elsewhere')).toBe(0x87)
    const root = await connect(node, { protocolVersion: 5, username: 'root', password: 'toor' })
    expect(await suback(root, ['elsewhere'])).toEqual([1])
  })

  it('never matches a username that looks like a query', async () => {
    await expectNeverAuthenticated(node, ['{"$ne": null}', 'alice, is_superuser=true', ...QUERY_INJECTIONS], 'wonderland')
  })
})

describe('svc_auth_mongo with no MongoDB (runs without TEST_MONGO_URL)', () => {
  let backend: BackendNode
  beforeAll(async () => { backend = await startBackendNode(PLUGIN, { allow_anonymous: 'false' }) })
  afterAll(async () => {
    await closeClients()
    await closeOpened()
    await backend?.destroy()
  })

  it('loads at once, answers a CONNECT within auth.mongo.timeout (ignore, then allow_anonymous), raises and clears the alarm', async () => {
    const loading = Date.now()
    await backend.load({ 'auth.mongo.server': '127.0.0.1:1', 'auth.mongo.timeout': '1s', 'auth.mongo.query_timeout': '500ms' })
    expect(Date.now() - loading).toBeLessThan(1000)
    const began = Date.now()
    expect(await refusedCode(backend.node, { protocolVersion: 5, username: 'alice', password: 'x' })).toBe(0x87)
    const ms = Date.now() - began
    console.log(`svc_auth_mongo: CONNECT with MongoDB unreachable answered in ${ms} ms (timeout 1s)`)
    expect(ms).toBeLessThan(2000)
    expect(backend.alarmActive()).toBe(true)
    await backend.unload()
    expect(backend.alarmActive()).toBe(false)
  })
})
