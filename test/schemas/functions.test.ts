/**
 * schema_decode / schema_encode as SQL functions: each event uses the registry of the node
 * it happened on (several nodes can share a process), and every failure makes the statement
 * fail with a reason rather than match.
 */
import { compileSql } from '../../rules/sql/index.js'
import { SchemaRegistry, memorySchemaTable } from '../../rules/schemas/registry.js'
import { attachRegistry, installSchemaFunctions } from '../../rules/schemas/functions.js'
import { silentLogger } from '../../node/logger.js'
import { ALERT_AVSC, SENSOR_AVSC, avroAlert, avroSensor } from './fixtures.js'

const registryOf = (): SchemaRegistry => new SchemaRegistry({ table: memorySchemaTable(), logger: silentLogger(), usedBy: () => [], resource: () => undefined })

const one = registryOf()
const two = registryOf()
beforeAll(async () => {
  installSchemaFunctions()
  attachRegistry('one@127.0.0.1', one)
  attachRegistry('two@127.0.0.1', two)
  // the same name, a different schema on each node
  await one.create({ name: 's', parser_type: 'avro', schema: SENSOR_AVSC })
  await two.create({ name: 's', parser_type: 'avro', schema: ALERT_AVSC })
})
afterAll(() => { one.close(); two.close() })

const cols = (node: string, payload: unknown): Record<string, unknown> => ({ topic: 't/1', node, payload })

describe('schema functions in SQL', () => {
  it("uses the registry of the event's node", () => {
    const rule = compileSql("SELECT schema_decode('s', payload) as d FROM \"t/#\"")
    expect(rule.run(cols('one@127.0.0.1', avroSensor.toBuffer({ id: 'a', temp: 1, hum: 2 })))).toEqual([{ d: { id: 'a', temp: 1, hum: 2 } }])
    expect(rule.run(cols('two@127.0.0.1', avroAlert.toBuffer({ id: 'b', temp: 3 })))).toEqual([{ d: { id: 'b', temp: 3 } }])
  })

  it('encodes into a Buffer that decodes back', () => {
    const rule = compileSql("SELECT schema_encode('s', json_decode(payload)) as e FROM \"t/#\"")
    const [out] = rule.run(cols('two@127.0.0.1', '{"id":"x","temp":2.5}'))!
    expect(Buffer.isBuffer(out.e)).toBe(true)
    expect(avroAlert.fromBuffer(out.e as Buffer)).toEqual(expect.objectContaining({ id: 'x', temp: 2.5 }))
  })

  it.each([
    ['data the schema cannot decode', "SELECT schema_decode('s', payload) as d FROM \"t/#\"", Buffer.from([0xff]), 'decode_failed', /schema_decode: schema s cannot decode binary\(1 bytes\): /],
    ['an unknown schema', "SELECT schema_decode('nope', payload) as d FROM \"t/#\"", 'x', 'schema_not_found', /no schema named nope/],
    ['a map given to decode', "SELECT schema_decode('s', json_decode(payload)) as d FROM \"t/#\"", '{"a":1}', 'function_clause', /expected binary data, got map/],
    ['a value encode cannot fit', "SELECT schema_encode('s', json_decode(payload)) as d FROM \"t/#\"", '{"id":1}', 'encode_failed', /field id: expected "string", got 1/],
    ['a message type that is not text', "SELECT schema_decode('s', payload, 5) as d FROM \"t/#\"", 'x', 'function_clause', /the message type must be a string/]
  ])('fails on %s with a reason, not a match', (_what, sql, payload, reason, message) => {
    const outcome = compileSql(sql).evaluate(cols('one@127.0.0.1', payload))
    expect(outcome.matched).toBe(false)
    const failure = (outcome as { failure: { reason: string, message: string } | null }).failure
    expect(failure?.reason).toBe(reason)
    expect(failure?.message).toMatch(message)
  })

  it('fails when the node has no registry and several nodes do', () => {
    const outcome = compileSql("SELECT schema_decode('s', payload) as d FROM \"t/#\"").evaluate(cols('three@127.0.0.1', 'x'))
    expect((outcome as { failure: { reason: string } | null }).failure?.reason).toBe('function_unavailable')
  })
})
