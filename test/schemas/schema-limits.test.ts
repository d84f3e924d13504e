/**
 * How deep a schema text may nest: an avro schema's JSON at most MAX_AVRO_SCHEMA_DEPTH
 * levels (about 100 nested records), a .proto file within protobufjs's recursion limit (32
 * messages inside one another). Deeper texts are a SchemaCompileError naming the limit,
 * never a stack overflow.
 */
import { compileAvro, MAX_AVRO_SCHEMA_DEPTH } from '../../rules/schemas/avro-codec.js'
import { compileProtobuf } from '../../rules/schemas/protobuf-codec.js'
import { SchemaCompileError } from '../../rules/schemas/codec.js'

function compileError (compile: () => unknown): SchemaCompileError {
  try {
    compile()
  } catch (err) {
    expect(err).toBeInstanceOf(SchemaCompileError)
    return err as SchemaCompileError
  }
  throw new Error('no error raised')
}

/** `n` arrays of arrays ... of int: one JSON level each. */
const avroArrays = (n: number): string => '{"type":"array","items":'.repeat(n) + '"int"' + '}'.repeat(n)

/** `n` records, each with one optional field of the next: five JSON levels each. */
function avroRecords (n: number): string {
  let s = '"int"'
  for (let i = n - 1; i >= 0; i--) s = `{"type":"record","name":"R${i}","fields":[{"name":"f","type":["null",${s}]}]}`
  return s
}

/** `n` messages, each inside the one before. */
function protoMessages (n: number): string {
  let s = 'syntax = "proto3";\n'
  for (let i = 0; i < n; i++) s += `message M${i} { int32 x = 1; `
  return s + ' }'.repeat(n)
}

describe('schema text depth', () => {
  it('compiles an avro schema nested up to the limit, and 100 nested records, and round-trips their data', () => {
    const arrays = compileAvro(avroArrays(MAX_AVRO_SCHEMA_DEPTH))
    let value: unknown = 7
    for (let i = 0; i < MAX_AVRO_SCHEMA_DEPTH; i++) value = [value]
    expect(arrays.decode(arrays.encode(value, undefined), undefined)).toEqual(value)
    const records = compileAvro(avroRecords(100))
    let rec: unknown = 5
    for (let i = 0; i < 100; i++) rec = { f: rec }
    expect(records.decode(records.encode(rec, undefined), undefined)).toEqual(rec)
  })

  it('refuses an avro schema nested one level more, naming the limit', () => {
    expect(compileError(() => compileAvro(avroArrays(MAX_AVRO_SCHEMA_DEPTH + 1))).message)
      .toBe('avro schema nests JSON objects and arrays more than 500 levels deep (about 100 nested records); the limit is 500')
  })

  it.each([
    ['arrays', avroArrays(100_000)],
    ['records', avroRecords(20_000)],
    ['a default value', `{"type":"record","name":"R","fields":[{"name":"f","type":"int","default":${'['.repeat(100_000)}${']'.repeat(100_000)}}]}`]
  ])('refuses an avro schema of %s nested 100,000 levels deep without a stack overflow', (_what, text) => {
    expect(compileError(() => compileAvro(text)).message).toMatch(/^avro schema nests JSON objects and arrays more than 500 levels deep/)
  })

  it('compiles 32 protobuf messages inside one another and refuses 33 with a clear message', () => {
    expect(() => compileProtobuf(protoMessages(32))).not.toThrow()
    expect(compileError(() => compileProtobuf(protoMessages(33))).message)
      .toBe('invalid protobuf schema: definitions nested too deeply for protobufjs (its recursion limit, 100, allows 32 messages inside one another)')
  })

  it('refuses protobuf definitions nested 100,000 levels deep without a stack overflow', () => {
    expect(compileError(() => compileProtobuf(protoMessages(100_000))).message).toMatch(/nested too deeply for protobufjs/)
    const option = 'syntax = "proto3";\nmessage M { int32 x = 1 [(o) = ' + '{ a: '.repeat(100_000) + '1' + ' }'.repeat(100_000) + ']; }'
    expect(compileError(() => compileProtobuf(option)).message).toMatch(/nested too deeply for protobufjs/)
  })
})
