/**
 * Microbenchmark of compiled rule SQL: nanoseconds per `evaluate()` of a few statements on
 * prepared columns (issue 6, Speed: the matching rule's closure under 2 µs). Every run gets a
 * fresh payload cache, as every event does in the runtime, so a JSON text payload is parsed
 * in every run.
 *
 *   npx tsc -p tsconfig.build.json && node dist/bench/rule-sql.js [--iterations N]
 *
 * Each case runs a warm-up, then `rounds` timed batches; the median batch is reported.
 */
import { compileSql, PayloadCache } from '../rules/sql/index.js'

interface BenchCase {
  name: string
  sql: string
  columns: Record<string, unknown>
  /** Whether the statement is expected to match (checked once before timing). */
  matches: boolean
}

const decoded = { x: 7, temp: 35, site: 'north' }
const raw = JSON.stringify(decoded)
const base = { clientid: 'c1', username: 'u', topic: 't/1', qos: 1, timestamp: 1700000000000 }
/** The spec-dialect columns of a bench/rules-run.ts message: `{"temp":35}` padded to 64 bytes. */
const benchMessage = {
  event: 'message.publish', client_id: 'c1', username: null, timestamp: 1700000000000, node: 'starling@127.0.0.1',
  id: '18c0d6f2a1b0000000001', topic: 't/1', payload: '{"temp":35}'.padEnd(64, ' '), peername: '127.0.0.1:50000', qos: 0
}

const CASES: BenchCase[] = [
  {
    name: 'bench/rules-run.ts matching rule, JSON text',
    sql: 'SELECT payload.temp as temp FROM "message.publish" WHERE payload.temp > 30',
    columns: benchMessage,
    matches: true
  },
  {
    name: 'bench/rules-run.ts WHERE false rule, JSON text',
    sql: 'SELECT payload.temp as temp FROM "t/#" WHERE payload.temp > 1000',
    columns: benchMessage,
    matches: false
  },
  {
    name: 'match, pre-decoded payload',
    sql: 'SELECT payload.x AS x FROM "t/#" WHERE payload.temp > 30 and topic =~ \'t/+\'',
    columns: { ...base, payload: decoded },
    matches: true
  },
  {
    name: 'no match (WHERE false), pre-decoded',
    sql: 'SELECT payload.x AS x FROM "t/#" WHERE payload.temp > 40 and topic =~ \'t/+\'',
    columns: { ...base, payload: decoded },
    matches: false
  },
  {
    name: 'match, JSON text payload',
    sql: 'SELECT payload.x AS x FROM "t/#" WHERE payload.temp > 30 and topic =~ \'t/+\'',
    columns: { ...base, payload: raw },
    matches: true
  },
  {
    name: 'SELECT * with a function, pre-decoded',
    sql: 'SELECT *, upper(clientid) AS cid FROM "t/#" WHERE qos >= 1',
    columns: { ...base, payload: decoded },
    matches: true
  },
  {
    name: 'FOREACH 3 elements with DO and INCASE',
    sql: 'FOREACH payload.l AS e DO e.v AS v INCASE e.v > 1 FROM "t/#"',
    columns: { ...base, payload: { l: [{ v: 1 }, { v: 2 }, { v: 3 }] } },
    matches: true
  }
]

function median (xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}

function bench (c: BenchCase, iterations: number, rounds: number): number {
  const compiled = compileSql(c.sql)
  const first = compiled.run(c.columns, new PayloadCache())
  if ((first !== null) !== c.matches) throw new Error(`${c.name}: expected ${c.matches ? 'a match' : 'no match'}, got ${JSON.stringify(first)}`)
  let sink = 0
  for (let i = 0; i < iterations; i++) sink += compiled.evaluate(c.columns, new PayloadCache()).matched ? 1 : 0 // warm-up
  const perRun: number[] = []
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < iterations; i++) sink += compiled.evaluate(c.columns, new PayloadCache()).matched ? 1 : 0
    perRun.push(Number(process.hrtime.bigint() - t0) / iterations)
  }
  if (sink < 0) console.log(sink) // keep the loop observable
  return median(perRun)
}

const arg = process.argv.indexOf('--iterations')
const iterations = arg === -1 ? 200_000 : Number(process.argv[arg + 1])
console.log(`rule SQL evaluate() — median of 7 rounds × ${iterations} runs (node ${process.version})`)
for (const c of CASES) {
  const ns = bench(c, iterations, 7)
  console.log(`${c.name.padEnd(48)} ${ns.toFixed(0).padStart(6)} ns/run   ${c.sql}`)
}
