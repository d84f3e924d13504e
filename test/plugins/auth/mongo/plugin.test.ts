/**
 * svc_auth_mongo without a server: the shipped file, the driver options, the selectors (values
 * as data), the ACL document form, and the queries over a fake collection.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadPluginConfig, parseConfText } from '../../../../node/config/index.js'
import { compileSelector, decideMongoAcl, mongoPoolOptions, openMongoBackend, renderSelector, svcAuthMongo } from '../../../../plugins/auth/mongo/plugin.js'
import { computePasswordHash, parsePasswordHash } from '../../../../plugins/auth/backend/index.js'
import { mongoClientOptions, mongoUrl } from '../../../../plugins/kit/pools/mongo.js'

const etc = fileURLToPath(new URL('../../../../etc/plugins/', import.meta.url))
const file = join(etc, 'svc_auth_mongo.conf')
const defaults = (overrides: Record<string, string> = {}): Record<string, any> =>
  ({ ...loadPluginConfig(file, svcAuthMongo.configSchema, { env: {}, overrides }) })
const ctx = { clientId: 'c1', username: 'alice', password: 'pw', peerhost: '127.0.0.1' }

/** A request of the framework that records whether the backend says MongoDB answered it. */
function request (): { answered: () => void, heard: boolean } {
  const r = { heard: false, answered: () => { r.heard = true } }
  return r
}

/** A fake MongoClient: collections answer findOne/find from `docs`, recording each filter. */
function fakeClient (docs: Record<string, any[]>): { client: any, filters: Array<[string, any]> } {
  const filters: Array<[string, any]> = []
  const matches = (doc: any, f: any): boolean => f.$or !== undefined ? f.$or.some((g: any) => matches(doc, g)) : Object.entries(f).every(([k, v]) => doc[k] === v)
  const collection = (name: string): any => ({
    findOne: async (f: any) => { filters.push([name, f]); return (docs[name] ?? []).find(d => matches(d, f)) ?? null },
    find: (f: any) => { filters.push([name, f]); return { toArray: async () => (docs[name] ?? []).filter(d => matches(d, f)) } }
  })
  return { filters, client: { db: () => ({ collection }), close: async () => {} } }
}

describe('etc/plugins/svc_auth_mongo.conf', () => {
  it('sets every fixed key of the schema and loads as the defaults', () => {
    const keys = parseConfText(readFileSync(file, 'utf8'), file).map(e => e.key)
    expect(keys.sort()).toEqual(Object.keys(svcAuthMongo.configSchema).filter(k => !k.includes('<name>')).sort())
    expect(defaults()).toEqual({ ...loadPluginConfig(join(etc, 'none.conf'), svcAuthMongo.configSchema, { env: {}, optional: true }) })
  })

  it('has EMQ X 4.4 defaults', () => {
    expect(defaults()).toMatchObject({
      'auth.mongo.type': 'single', 'auth.mongo.server': '127.0.0.1:27017', 'auth.mongo.pool': 8, 'auth.mongo.database': 'mqtt',
      'auth.mongo.auth_query.collection': 'mqtt_user', 'auth.mongo.auth_query.password_field': 'password',
      'auth.mongo.auth_query.password_hash': 'sha256', 'auth.mongo.auth_query.selector': 'username=%u',
      'auth.mongo.super_query.super_field': 'is_superuser', 'auth.mongo.acl_query.collection': 'mqtt_acl', 'auth.mongo.acl_query.selector': 'username=%u'
    })
    expect(svcAuthMongo.configSchema['auth.mongo.password'].secret).toBe(true)
  })
})

describe('driver options', () => {
  it('maps single, rs, credentials and modes', () => {
    const single = mongoPoolOptions(defaults({ 'auth.mongo.login': 'u', 'auth.mongo.password': 'p' }), (x) => x)
    expect(mongoUrl(single)).toBe('mongodb://127.0.0.1:27017/')
    expect(mongoClientOptions(single)).toMatchObject({ directConnection: true, maxPoolSize: 8, auth: { username: 'u', password: 'p' }, authSource: 'admin', readPreference: 'primary', serverSelectionTimeoutMS: 5000 })
    const rs = mongoPoolOptions(defaults({ 'auth.mongo.type': 'rs', 'auth.mongo.rs_set_name': 'r0', 'auth.mongo.server': 'a:1,b:2', 'auth.mongo.r_mode': 'slave_ok' }), (x) => x)
    expect(mongoUrl(rs)).toBe('mongodb://a:1,b:2/')
    expect(mongoClientOptions(rs)).toMatchObject({ replicaSet: 'r0', readPreference: 'secondaryPreferred' })
    expect(mongoClientOptions(rs).directConnection).toBeUndefined()
    expect(() => mongoPoolOptions(defaults({ 'auth.mongo.type': 'rs' }), (x) => x)).toThrow(/rs_set_name/)
    expect(() => mongoPoolOptions(defaults({ 'auth.mongo.server': 'a:1,b:2' }), (x) => x)).toThrow(/auth.mongo.server/)
  })
})

describe('selectors', () => {
  it('renders values as strings in place, never as fields or operators', () => {
    const s = compileSelector('username=%u, clientid=%c', 'k')
    expect(renderSelector(s, ctx)).toEqual({ username: 'alice', clientid: 'c1' })
    const evil = { ...ctx, username: 'x, is_superuser=true', clientId: '{"$ne": null}' }
    expect(renderSelector(s, evil)).toEqual({ username: 'x, is_superuser=true', clientid: '{"$ne": null}' })
    expect(() => compileSelector('$where=1', 'k')).toThrow(/k/)
    expect(() => compileSelector('novalue', 'k')).toThrow(/k/)
  })
})

describe('ACL documents', () => {
  it('decides EMQ X 4.4 style: match allow, documents but no match deny, none ignore', () => {
    const docs = [{ username: 'alice', publish: ['p/%u'], subscribe: ['s/#'], pubsub: ['both'] }]
    expect(decideMongoAcl(docs, ctx, 'publish', 'p/alice')).toBe('allow')
    expect(decideMongoAcl(docs, ctx, 'subscribe', 'p/alice')).toBe('deny')
    expect(decideMongoAcl(docs, ctx, 'subscribe', 's/x')).toBe('allow')
    expect(decideMongoAcl(docs, ctx, 'publish', 'both')).toBe('allow')
    expect(decideMongoAcl(docs, { ...ctx, username: '#' }, 'publish', 'p/x')).toBe('deny')
    expect(decideMongoAcl([], ctx, 'publish', 'x')).toBe('ignore')
  })
})

describe('queries over a fake client', () => {
  const hash = computePasswordHash(parsePasswordHash('sha256', 'k').spec, Buffer.from('pw'), undefined)!

  it('authenticates, reads the superuser flag, and ORs the ACL selectors', async () => {
    const { client, filters } = fakeClient({
      mqtt_user: [{ username: 'alice', password: hash, is_superuser: true }],
      mqtt_acl: [{ username: '$all', publish: ['pub/all'] }]
    })
    const b = openMongoBackend(client, defaults({ 'auth.mongo.acl_query.selector.2': 'username=$all' }))
    expect(await b.authenticate!(ctx, request())).toEqual({ verdict: 'allow', superuser: true })
    expect(await b.authenticate!({ ...ctx, password: 'no' }, request())).toEqual({ verdict: 'deny' })
    expect(await b.authenticate!({ ...ctx, username: 'bob' }, request())).toEqual({ verdict: 'ignore' })
    expect(await b.authenticate!({ ...ctx, username: undefined }, request())).toEqual({ verdict: 'ignore' })
    expect(await b.checkAcl!({ ...ctx, topic: 'pub/all', access: 2 }, 'publish', request())).toBe('allow')
    expect(await b.checkAcl!({ ...ctx, topic: 'other', access: 2 }, 'publish', request())).toBe('deny')
    expect(filters.at(-1)).toEqual(['mqtt_acl', { $or: [{ username: 'alice' }, { username: '$all' }] }])
  })

  it('says MongoDB answered only when a query was made (no username: nothing asked, nothing heard)', async () => {
    const { client } = fakeClient({ mqtt_user: [] })
    const b = openMongoBackend(client, defaults())
    const asked = request()
    expect(await b.authenticate!({ ...ctx, username: 'bob' }, asked)).toEqual({ verdict: 'ignore' })
    expect(asked.heard).toBe(true)
    const anonymous = request()
    expect(await b.authenticate!({ ...ctx, username: undefined }, anonymous)).toEqual({ verdict: 'ignore' })
    expect(anonymous.heard).toBe(false)
  })

  it('reads the salt field with password_field = password,salt', async () => {
    const salted = computePasswordHash(parsePasswordHash('salt,sha256', 'k').spec, Buffer.from('pw'), 'NaCl')!
    const { client } = fakeClient({ mqtt_user: [{ username: 'alice', password: salted, salt: 'NaCl' }] })
    const b = openMongoBackend(client, defaults({ 'auth.mongo.auth_query.password_hash': 'salt,sha256', 'auth.mongo.auth_query.password_field': 'password,salt' }))
    expect(await b.authenticate!(ctx, request())).toEqual({ verdict: 'allow', superuser: false })
  })
})
