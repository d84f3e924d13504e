/**
 * Microbenchmark of the schema registry in rule SQL (issue 7, Speed): microseconds per
 * message for decode + select + encode of a small avro and a small protobuf schema, i.e.
 * one compiled rule
 *
 *   SELECT schema_decode(S, payload[, 'Sensor']) as d, schema_encode(A, d[, 'Alert']) as out
 *   FROM "t/#" WHERE d.temp > 30
 *
 * run on prepared columns with a binary payload, and the codec calls alone for comparison.
 *
 *   npx tsc -p tsconfig.build.json && node dist/bench/schema-codec.js [--iterations N]
 *
 * Each case runs a warm-up, then 7 timed batches; the median batch is reported.
 */
import { compileSql } from '../rules/sql/index.js'
import { SchemaRegistry, memorySchemaTable } from '../rules/schemas/registry.js'
import { attachRegistry, installSchemaFunctions } from '../rules/schemas/functions.js'
import { silentLogger } from '../node/logger.js'

const NODE = 'bench@127.0.0.1'

const SENSOR_AVSC = JSON.stringify({
  type: 'record',
  name: 'Sensor',
  fields: [{ name: 'id', type: 'string' }, { name: 'temp', type: 'double' }, { name: 'hum', type: 'int' }, { name: 'ok', type: 'boolean' }]
})
const ALERT_AVSC = JSON.stringify({ type: 'record', name: 'Alert', fields: [{ name: 'id', type: 'string' }, { name: 'temp', type: 'double' }] })
const PROTO = `syntax = "proto3";
message Sensor { string id = 1; double temp = 2; int32 hum = 3; bool ok = 4; }
message Alert { string id = 1; double temp = 2; }
`

/** The middle value of `xs`. */
function median (xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}

/** Median ns per call of `fn` over 7 batches of `iterations`, after a warm-up batch. */
function time (fn: () => unknown, iterations: number): number {
  let sink = 0
  for (let i = 0; i < iterations; i++) sink += fn() === null ? 0 : 1
  const batches: number[] = []
  for (let r = 0; r < 7; r++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < iterations; i++) sink += fn() === null ? 0 : 1
    batches.push(Number(process.hrtime.bigint() - t0) / iterations)
  }
  if (sink < 0) console.log(sink)
  return median(batches)
}

async function main (): Promise<void> {
  const arg = process.argv.indexOf('--iterations')
  const iterations = arg === -1 ? 100_000 : Number(process.argv[arg + 1])
  installSchemaFunctions()
  const registry = new SchemaRegistry({ table: memorySchemaTable(), logger: silentLogger(), usedBy: () => [], resource: () => undefined })
  attachRegistry(NODE, registry)
  await registry.create({ name: 'sensor', parser_type: 'avro', schema: SENSOR_AVSC })
  await registry.create({ name: 'alert', parser_type: 'avro', schema: ALERT_AVSC })
  await registry.create({ name: 'pb', parser_type: 'protobuf', schema: PROTO })

  const reading = { id: 'sensor-0042', temp: 31.5, hum: 40, ok: true }
  const avroPayload = registry.encode('sensor', reading)
  const pbPayload = registry.encode('pb', reading, 'Sensor')
  const columns = (payload: Buffer): Record<string, unknown> =>
    ({ clientid: 'c1', username: 'u', topic: 't/1', qos: 1, timestamp: 1700000000000, node: NODE, payload })

  const cases: Array<{ name: string, run: () => unknown }> = []
  const rule = (name: string, sql: string, payload: Buffer): void => {
    const compiled = compileSql(sql)
    const cols = columns(payload)
    const first = compiled.run(cols)
    if (first === null || !Buffer.isBuffer(first[0].out)) throw new Error(`${name}: expected a match with a binary out, got ${JSON.stringify(first)}`)
    cases.push({ name, run: () => compiled.run(cols) })
  }
  rule('avro: rule decode + WHERE + encode',
    "SELECT schema_decode('sensor', payload) as d, schema_encode('alert', d) as out FROM \"t/#\" WHERE d.temp > 30", avroPayload)
  rule('protobuf: rule decode + WHERE + encode',
    "SELECT schema_decode('pb', payload, 'Sensor') as d, schema_encode('pb', d, 'Alert') as out FROM \"t/#\" WHERE d.temp > 30", pbPayload)
  const decodedAvro = registry.decode('sensor', avroPayload)
  const decodedPb = registry.decode('pb', pbPayload, 'Sensor')
  cases.push({ name: 'avro: decode only', run: () => registry.decode('sensor', avroPayload) })
  cases.push({ name: 'avro: encode only', run: () => registry.encode('alert', decodedAvro) })
  cases.push({ name: 'protobuf: decode only', run: () => registry.decode('pb', pbPayload, 'Sensor') })
  cases.push({ name: 'protobuf: encode only', run: () => registry.encode('pb', decodedPb, 'Alert') })

  console.log(`schema codecs in rule SQL — median of 7 rounds × ${iterations} messages (node ${process.version})`)
  console.log(`payloads: avro ${avroPayload.length} bytes, protobuf ${pbPayload.length} bytes`)
  for (const c of cases) {
    const ns = time(c.run, iterations)
    console.log(`${c.name.padEnd(40)} ${(ns / 1000).toFixed(2).padStart(7)} µs/message`)
  }
  registry.close()
}

await main()
