/**
 * The 3rd-party codec path without a node: the reference codec server over HTTP and TCP,
 * the exchange the SQL functions use (a worker thread, answers by promise), its timeouts,
 * the deferred answers the rule engine waits for, and the back-off after transport failures. The exchanges talk to the service
 * in a child process (codec-process.ts says why); the rest uses one in this process.
 */
import { freePort } from '../helpers/node.js'
import { startCodecServer, referenceCodec, type CodecServer } from '../../rules/schemas/codec-server.js'
import { FrameReader, frame, type CodecRequest } from '../../rules/schemas/codec-wire.js'
import { CodecExchange, type CodecTarget } from '../../rules/schemas/codec-exchange.js'
import { DeferredResult } from '../../rules/funcs/errors.js'
import { ThirdPartyCodec, probeService, BACKOFF_START_MS } from '../../rules/schemas/third-party-codec.js'
import type { Schema } from '../../rules/schemas/schema.js'
import { removeCodecBuild, startCodecProcess, type CodecProcess } from './codec-process.js'

let server: CodecServer
let service: CodecProcess
const exchange = new CodecExchange()

beforeAll(async () => {
  server = await startCodecServer({ http: {}, tcp: {} })
  service = await startCodecProcess()
})
afterAll(async () => {
  exchange.close()
  await server.close()
  await service.stop()
  removeCodecBuild()
})

const request = (payload: Buffer, opts = 'xor:k', type: CodecRequest['type'] = 'decode'): string =>
  JSON.stringify({ type, schema_name: 's', opts, payload: payload.toString('base64') })
const httpTarget = (): CodecTarget => ({ kind: 'http', url: service.httpUrl, headers: {} })
const tcpTarget = (): CodecTarget => {
  const [host, port] = service.tcpAddress.split(':')
  return { kind: 'tcp', host, port: Number(port) }
}
const xorK = (b: Buffer): Buffer => Buffer.from(b.map(x => x ^ 'k'.charCodeAt(0)))

describe('the reference codec', () => {
  it('xors with the key, passes echo through, and refuses unknown steps', async () => {
    const data = Buffer.from('hello')
    expect(await referenceCodec({ type: 'decode', schema_name: 's', opts: 'xor:k', payload: '' }, data)).toEqual(xorK(data))
    expect(await referenceCodec({ type: 'encode', schema_name: 's', opts: 'echo', payload: '' }, data)).toEqual(data)
    await expect(referenceCodec({ type: 'encode', schema_name: 's', opts: 'rot13', payload: '' }, data)).rejects.toThrow(/unknown step 'rot13'/)
  })

  it('answers HTTP with status 200 and base64, and a bad request with 400', async () => {
    const ok = await fetch(server.httpUrl!, { method: 'POST', body: request(Buffer.from('abc')) })
    expect(ok.status).toBe(200)
    expect(Buffer.from(await ok.text(), 'base64')).toEqual(xorK(Buffer.from('abc')))
    const bad = await fetch(server.httpUrl!, { method: 'POST', body: '{"type":"squash"}' })
    expect([bad.status, await bad.text()]).toEqual([400, 'type must be "decode" or "encode"'])
  })
})

describe('TCP framing', () => {
  it('splits a stream into frames however the chunks fall', () => {
    const reader = new FrameReader()
    const bytes = Buffer.concat([frame('one'), frame(''), frame('three')])
    const frames = [...bytes].flatMap((_b, i) => reader.push(bytes.subarray(i, i + 1)))
    expect(frames.map(f => f.toString())).toEqual(['one', '', 'three'])
  })
})

describe('an exchange', () => {
  it.each([['HTTP', httpTarget], ['TCP', tcpTarget]])('gets the answer over %s', async (_kind, target) => {
    for (const text of ['first', 'second', 'third']) {
      const result = await exchange.call({ target: target(), body: request(Buffer.from(text)), connectTimeoutMs: 2000, parseTimeoutMs: 2000 })
      expect(result).toEqual({ ok: true, payload: xorK(Buffer.from(text)).toString('base64') })
    }
  })

  it.each([['HTTP', httpTarget], ['TCP', tcpTarget]])('reports an error the service answers over %s as a service failure', async (_kind, target) => {
    const result = await exchange.call({ target: target(), body: request(Buffer.from('x'), 'fail:no such device'), connectTimeoutMs: 2000, parseTimeoutMs: 2000 })
    expect(result).toMatchObject({ ok: false, stage: 'service' })
    expect((result as { error: string }).error).toMatch(/no such device/)
  })

  it.each([['HTTP', httpTarget], ['TCP', tcpTarget]])('gives up after parse_timeout over %s, and the next exchange gets its own answer', async (_kind, target) => {
    const started = Date.now()
    const slow = await exchange.call({ target: target(), body: request(Buffer.from('slow'), 'delay:600,xor:k'), connectTimeoutMs: 2000, parseTimeoutMs: 200 })
    expect(slow).toMatchObject({ ok: false, stage: 'parse' })
    expect(Date.now() - started).toBeLessThan(1500)
    const next = await exchange.call({ target: target(), body: request(Buffer.from('next')), connectTimeoutMs: 2000, parseTimeoutMs: 2000 })
    expect(next).toEqual({ ok: true, payload: xorK(Buffer.from('next')).toString('base64') })
  })

  it('reports a refused connection as a connect failure', async () => {
    const port = await freePort()
    expect(await exchange.call({ target: { kind: 'tcp', host: '127.0.0.1', port }, body: request(Buffer.from('x')), connectTimeoutMs: 1000, parseTimeoutMs: 1000 }))
      .toMatchObject({ ok: false, stage: 'connect' })
    expect(await exchange.call({ target: { kind: 'http', url: `http://127.0.0.1:${port}/`, headers: {} }, body: request(Buffer.from('x')), connectTimeoutMs: 1000, parseTimeoutMs: 1000 }))
      .toMatchObject({ ok: false, stage: 'connect' })
  })
})

describe('probing a service at create time', () => {
  it('resolves for a listening service and rejects for a closed port', async () => {
    await probeService({ kind: 'http', url: server.httpUrl!, headers: {} }, 1000)
    const [host, port] = server.tcpAddress!.split(':')
    await probeService({ kind: 'tcp', host, port: Number(port) }, 1000)
    const closed = await freePort()
    await expect(probeService({ kind: 'tcp', host: '127.0.0.1', port: closed }, 1000)).rejects.toThrow(/ECONNREFUSED/)
  })
})

/** What a codec call answers once its exchange is done (the rule engine waits the same way). */
async function answered<T> (call: () => T): Promise<T> {
  for (let waits = 0; waits < 3; waits++) {
    try {
      return call()
    } catch (err) {
      if (!(err instanceof DeferredResult)) throw err
      await err.ready
    }
  }
  throw new Error('the call is still waiting after three answers')
}

describe('the 3rd-party codec', () => {
  const schemaOf = (server: string, opts = 'xor:k'): Schema => ({
    name: 'xor', parser_type: '3rd-party', schema: '', parser_addr: { server }, parser_opts: { '3rd_party_opts': opts, connect_timeout: 1, parse_timeout: 1 }, description: ''
  })

  it('never waits: the first call defers, and once the answer is in the same call answers at once', async () => {
    const codec = new ThirdPartyCodec(schemaOf(service.tcpAddress), exchange, () => undefined)
    let deferred: unknown
    try { codec.encode({ temp: 31 }, undefined) } catch (err) { deferred = err }
    expect(deferred).toBeInstanceOf(DeferredResult)
    await (deferred as DeferredResult).ready
    const encoded = codec.encode({ temp: 31 }, undefined)
    expect(encoded).toEqual(xorK(Buffer.from('{"temp":31}')))
    expect(await answered(() => codec.decode(encoded, undefined))).toBe('{"temp":31}')
  })

  it('stops calling an unreachable service for a back-off, then tries again', async () => {
    let now = 1_000_000
    const port = await freePort()
    const codec = new ThirdPartyCodec(schemaOf(`127.0.0.1:${port}`), exchange, () => undefined, () => now)
    await expect(answered(() => codec.decode(Buffer.from('a'), undefined))).rejects.toThrow(/ECONNREFUSED/)
    expect(() => codec.decode(Buffer.from('b'), undefined)).toThrow(/not called for another 1000 ms/)
    now += BACKOFF_START_MS
    await expect(answered(() => codec.decode(Buffer.from('c'), undefined))).rejects.toThrow(/ECONNREFUSED/)
    expect(() => codec.decode(Buffer.from('d'), undefined)).toThrow(/not called for another 2000 ms/)
  })

  it('does not back off for an error the service answers', async () => {
    const codec = new ThirdPartyCodec(schemaOf(service.tcpAddress, 'fail:bad frame'), exchange, () => undefined)
    await expect(answered(() => codec.decode(Buffer.from('x'), undefined))).rejects.toThrow(/answered an error.*bad frame/)
    await expect(answered(() => codec.decode(Buffer.from('y'), undefined))).rejects.toThrow(/answered an error.*bad frame/)
  })
})
