/**
 * data_to_opentsdb's client (plugins/backend_opentsdb/client.ts) against a node:http stand-in
 * that records each /api/put request and answers as the test says. This checks the request
 * shape (path, query, JSON body, max_batch_size, order) and how answers are read; it is NOT
 * the real OpenTSDB, which test/e2e/data-opentsdb.test.ts uses when TEST_OPENTSDB_URL is set.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { WriteRefused } from '../../../plugins/kit/data/index.js'
import { opentsdbClient } from '../../../plugins/backend_opentsdb/client.js'
import { compileOpentsdbAction, opentsdbRow, pointOf, type OpentsdbWrite } from '../../../plugins/backend_opentsdb/index.js'

interface Seen { method: string, url: string, body: any }

let server: Server
let seen: Seen[] = []
let answer: (req: Seen, res: ServerResponse) => void = (_req, res) => { res.statusCode = 204; res.end() }

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    let text = ''
    req.on('data', (c: Buffer) => { text += c.toString('utf8') })
    req.on('end', () => {
      const s = { method: req.method ?? '', url: req.url ?? '', body: text === '' ? undefined : JSON.parse(text) }
      seen.push(s)
      if (s.url === '/api/version') { res.setHeader('content-type', 'application/json'); res.end('{"version":"2.4.1"}'); return }
      answer(s, res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
})
afterAll(async () => { await new Promise((resolve) => server.close(resolve)) })
beforeEach(() => { seen = []; answer = (_req, res) => { res.statusCode = 204; res.end() } })

const origin = (): string => `http://127.0.0.1:${(server.address() as AddressInfo).port}`
const json = (res: ServerResponse, status: number, body: unknown): void => { res.statusCode = status; res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(body)) }

/** A write of `n` runs (seq `from`..) with the action's `params`. */
function runs (params: Record<string, unknown>, n: number, from = 0): OpentsdbWrite {
  const action = compileOpentsdbAction(params)
  const rows = Array.from({ length: n }, (_, i) => opentsdbRow(action, { metric: 'sensor.temp', tags: { host: 'h1', seq: from + i }, value: 20 + from + i, timestamp: 1_700_000_000_000 + from + i }))
  return { q: rows[0].q, m: rows[0].m, p: rows.flatMap((r) => r.p) }
}

describe('data_to_opentsdb client (against a node:http stand-in, not a real OpenTSDB)', () => {
  it('reads a data point from metric, tags, value and timestamp; says why when the data is none', () => {
    expect(pointOf({ metric: 'cpu', tags: { host: 'a', core: 1 }, value: '12.5', timestamp: 1_700_000_000_123 })).toEqual({ d: { metric: 'cpu', tags: { host: 'a', core: '1' }, value: 12.5, timestamp: 1_700_000_000_123 } })
    expect(pointOf({ metric: 'cpu', tags: { host: 'a' }, value: 1 }, 42)).toEqual({ d: { metric: 'cpu', tags: { host: 'a' }, value: 1, timestamp: 42 } })
    expect(pointOf({ tags: { host: 'a' }, value: 1 })).toEqual({ e: 'the rule selected no metric (a string)' })
    expect(pointOf({ metric: 'cpu', tags: { host: 'a' }, value: 'hot' })).toEqual({ e: 'value of metric cpu is not a number' })
    expect(pointOf({ metric: 'cpu', tags: {}, value: 1 })).toMatchObject({ e: expect.stringMatching(/at least one tag/) })
  })

  it('connects with GET /api/version', async () => {
    const client = await opentsdbClient({ origin: origin(), poolSize: 2 })
    await client.connect()
    expect(await client.alive()).toBe(true)
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(['GET /api/version', 'GET /api/version'])
    await client.close()
  })

  it('posts the points to /api/put in order, at most max_batch_size per request, with summary on by default', async () => {
    const client = await opentsdbClient({ origin: origin(), poolSize: 2 })
    await client.write([runs({}, 30), runs({}, 15, 30)])
    expect(seen.map((s) => [s.url, s.body.length])).toEqual([['/api/put?summary=true', 20], ['/api/put?summary=true', 20], ['/api/put?summary=true', 5]])
    expect(seen.flatMap((s) => s.body.map((p: any) => p.value))).toEqual(Array.from({ length: 45 }, (_, i) => 20 + i))
    expect(seen[0].body[3]).toEqual({ metric: 'sensor.temp', timestamp: 1_700_000_000_003, value: 23, tags: { host: 'h1', seq: '3' } })
    await client.close()
  })

  it('sends details, sync and sync_timeout as /api/put asks for them', async () => {
    const client = await opentsdbClient({ origin: origin(), poolSize: 2 })
    await client.write([runs({ details: true, summary: false, sync: true, sync_timeout: 2000, max_batch_size: 50 }, 30)])
    expect(seen.map((s) => [s.url, s.body.length])).toEqual([['/api/put?details=true&sync=true&sync_timeout=2000', 30]])
    await client.close()
  })

  it('with details, names the points OpenTSDB refused (400) and sends none again', async () => {
    answer = (req, res) => json(res, 400, { success: req.body.length - 1, failed: 1, errors: [{ datapoint: { ...req.body[2], value: String(req.body[2].value) }, error: 'Unable to parse value to a number' }] })
    const client = await opentsdbClient({ origin: origin(), poolSize: 2 })
    const err = await client.write([runs({ details: true, max_batch_size: 5 }, 10)]).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(WriteRefused)
    expect((err as WriteRefused).rows).toEqual([2, 7])
    expect((err as Error).message).toMatch(/answered 400 \(1 of 5 points failed\): Unable to parse value to a number/)
    expect(seen.length).toBe(2)
    await client.close()
  })

  it('without details, a 400 is a refusal of the request (the kit splits it); another status is transient', async () => {
    answer = (_req, res) => json(res, 400, { success: 4, failed: 1 })
    const client = await opentsdbClient({ origin: origin(), poolSize: 2 })
    const refused = await client.write([runs({}, 5)]).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(WriteRefused)
    expect((refused as WriteRefused).rows).toBeUndefined()
    answer = (_req, res) => json(res, 503, { error: { message: 'region server busy' } })
    const transient = await client.write([runs({}, 5)]).catch((e: unknown) => e)
    expect(transient).not.toBeInstanceOf(WriteRefused)
    expect((transient as Error).message).toMatch(/answered 503: region server busy/)
    await client.close()
  })

  it('refuses a run whose data is no data point without sending it, and writes the others', async () => {
    const client = await opentsdbClient({ origin: origin(), poolSize: 2 })
    const w = runs({}, 3)
    w.p.splice(1, 0, pointOf({ metric: 'x', value: 1 }))
    const err = await client.write([w]).catch((e: unknown) => e)
    expect((err as WriteRefused).rows).toEqual([1])
    expect(seen.map((s) => s.body.length)).toEqual([3])
    await client.close()
  })
})
