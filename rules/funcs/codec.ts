/**
 * Hashes, codecs, compression and random values (EMQ X 4.4 `emqx_rule_funcs` "Hash Funcs",
 * "Data encode and decode", "gzip/zip Funcs", "Random Funcs"). Binary results are strings when
 * they are printable UTF-8 text and Buffers otherwise (see value-model.ts `binaryValue`).
 */
import { createHash, randomUUID } from 'node:crypto'
import { deflateRawSync, deflateSync, gunzipSync, gzipSync, inflateRawSync, inflateSync } from 'node:zlib'
import { ConversionError } from './errors.js'
import { binaryValue, bytesOf, jsonDecode, jsonEncode, textOf } from './value-model.js'
import type { RuleFunction } from './types.js'

const one = (name: string, fn: (v: unknown) => unknown): RuleFunction => ({ name, minArgs: 1, maxArgs: 1, fn })

/** Lower-case hex digest of a binary (emqx_misc:bin2hexstr_a_f_lower). */
const hash = (name: string, algorithm: string): RuleFunction =>
  one(name, (v) => createHash(algorithm).update(bytesOf(name, v)).digest('hex'))

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

function base64Decode (v: unknown): string | Buffer {
  const s = textOf('base64_decode', v).replace(/[\t\n\r ]/g, '')
  if (!BASE64.test(s) || s.length % 4 === 1) throw new ConversionError('base64_decode', 'badarg', 'not base64 text')
  return binaryValue(Buffer.from(s, 'base64'))
}

/** A zlib transform of a binary; corrupt input fails with `data_error`. */
const zlibFn = (name: string, op: (b: Buffer) => Buffer): RuleFunction => one(name, (v) => {
  const input = bytesOf(name, v)
  let out: Buffer
  try {
    out = op(input)
  } catch (err) {
    throw new ConversionError(name, 'data_error', (err as Error).message)
  }
  return binaryValue(out)
})

/** md5, sha, sha256; base64 and JSON codecs; gzip, zip (raw deflate), zip_compress (zlib). */
export const codecFunctions: RuleFunction[] = [
  hash('md5', 'md5'),
  hash('sha', 'sha1'),
  hash('sha256', 'sha256'),
  one('base64_encode', (v) => bytesOf('base64_encode', v).toString('base64')),
  one('base64_decode', base64Decode),
  one('json_encode', (v) => jsonEncode('json_encode', v)),
  one('json_decode', (v) => jsonDecode('json_decode', v)),
  zlibFn('gzip', gzipSync),
  zlibFn('gunzip', gunzipSync),
  zlibFn('zip', deflateRawSync),
  zlibFn('unzip', inflateRawSync),
  zlibFn('zip_compress', deflateSync),
  zlibFn('zip_uncompress', inflateSync)
]

/** random() (a float in [0, 1)), uuid_v4(), uuid_v4_no_hyphen(). */
export const randomFunctions: RuleFunction[] = [
  { name: 'random', minArgs: 0, maxArgs: 0, fn: () => Math.random() },
  { name: 'uuid_v4', minArgs: 0, maxArgs: 0, fn: () => randomUUID() },
  { name: 'uuid_v4_no_hyphen', minArgs: 0, maxArgs: 0, fn: () => randomUUID().replaceAll('-', '') }
]
