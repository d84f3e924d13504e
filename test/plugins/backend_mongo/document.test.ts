/**
 * data_to_mongo's params and documents (plugins/backend_mongo/document.ts) and the three
 * resource types' configs; the real server is test/e2e/data-mongo.test.ts's (TEST_MONGO_URL).
 */
import { compileMongoAction, mongoRow, mongoSettingsOf, objectIdHex } from '../../../plugins/backend_mongo/index.js'

describe('data_to_mongo documents', () => {
  it('inserts every selected field, with an _id chosen when the action ran', () => {
    const w = mongoRow(compileMongoAction({ collection: 'msgs' }), { clientid: 'c1', qos: 1, gone: undefined })
    expect(w).toEqual({ c: 'msgs', d: [{ d: { clientid: 'c1', qos: 1 }, i: expect.stringMatching(/^[0-9a-f]{24}$/) }] })
    expect(objectIdHex()).not.toBe(objectIdHex())
  })

  it('fills a JSON payload_tmpl, a lone placeholder keeping its type; a document with its own _id keeps it', () => {
    const action = compileMongoAction({ collection: 'msgs', payload_tmpl: '{"_id": "${id}", "who": "c-${clientid}", "temp": "${payload.temp}", "at": {"ts": "${timestamp}"}}' })
    expect(mongoRow(action, { id: 'm1', clientid: 'c1', payload: { temp: 21.5 }, timestamp: 1700000000000 })).toEqual({
      c: 'msgs', d: [{ d: { _id: 'm1', who: 'c-c1', temp: 21.5, at: { ts: 1700000000000 } } }]
    })
  })

  it('refuses a collection with a placeholder or $, and a payload_tmpl that is not a JSON object (108)', () => {
    expect(() => compileMongoAction({ collection: 'm_${clientid}' })).toThrow(/parameter collection cannot hold a \$\{key\} placeholder/)
    expect(() => compileMongoAction({ collection: 'a$b' })).toThrow(/parameter collection must name a collection/)
    expect(() => compileMongoAction({ collection: 'm', payload_tmpl: 'clientid=${clientid}' })).toThrow(/parameter payload_tmpl must be a JSON object/)
    expect(() => compileMongoAction({ collection: 'm', payload_tmpl: '[1]' })).toThrow(/must be a JSON object \(one document\)/)
  })

  it('reads the three topologies\' configs: one server for single, rs_set_name for rs', () => {
    const single = mongoSettingsOf('backend_mongo_single', { servers: 'db1', database: 'mqtt', login: 'u', password: 'p', pool_size: 4, w_mode: 'safe' })
    expect(single).toEqual({ database: 'mqtt', opts: expect.objectContaining({ type: 'single', servers: [{ host: 'db1', port: 27017 }], username: 'u', password: 'p', pool: 4, wMode: 'safe' }) })
    expect(() => mongoSettingsOf('backend_mongo_single', { servers: 'a:1,b:2', database: 'mqtt' })).toThrow(/must name one server for backend_mongo_single/)
    expect(() => mongoSettingsOf('backend_mongo_rs', { servers: 'a:1,b:2', database: 'mqtt' })).toThrow(/parameter rs_set_name must name the replica set/)
    expect(mongoSettingsOf('backend_mongo_rs', { servers: 'a:1,b:2', database: 'mqtt', rs_set_name: 'rs0' }).opts).toMatchObject({ type: 'rs', rsSetName: 'rs0' })
    expect(mongoSettingsOf('backend_mongo_sharded', { servers: 'a,b', database: 'mqtt' }).opts.type).toBe('sharded')
    expect(() => mongoSettingsOf('backend_mongo_single', { servers: 'a', database: 'a.b' })).toThrow(/parameter database must name a database/)
  })
})
