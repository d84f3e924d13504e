/**
 * The built-in codecs: avro (avsc) and protobuf (protobufjs, .proto text parsed at run
 * time). Decoded data is plain maps the SQL can read; encoding round-trips; schema text
 * that does not compile is an error naming the line; bad data is a clear error.
 */
import { compileAvro } from '../../rules/schemas/avro-codec.js'
import { compileProtobuf } from '../../rules/schemas/protobuf-codec.js'
import { SchemaCompileError } from '../../rules/schemas/codec.js'

const SENSOR_AVSC = JSON.stringify({
  type: 'record',
  name: 'Sensor',
  namespace: 'iot',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'temp', type: 'double' },
    { name: 'count', type: 'long' },
    { name: 'tags', type: { type: 'array', items: 'string' } },
    { name: 'loc', type: { type: 'record', name: 'Loc', fields: [{ name: 'lat', type: 'float' }, { name: 'lon', type: 'float' }] } },
    { name: 'note', type: ['null', 'string'], default: null },
    { name: 'raw', type: 'bytes', default: '' }
  ]
}, null, 2)

const SENSOR_PROTO = `syntax = "proto3";
package iot;

message Sensor {
  string id = 1;
  double temp = 2;
  int64 count = 3;
  repeated string tags = 4;
  Loc loc = 5;
  Kind kind = 6;
  bytes raw = 7;
  enum Kind { INDOOR = 0; OUTDOOR = 1; }
}

message Loc {
  float lat = 1;
  float lon = 2;
}
`

const plainProto = (v: unknown): boolean => Object.getPrototypeOf(v) === Object.prototype

describe('avro', () => {
  const codec = compileAvro(SENSOR_AVSC)
  const reading = { id: 's1', temp: 31.5, count: 7, tags: ['a', 'b'], loc: { lat: 1.5, lon: -2.25 }, note: null, raw: Buffer.from([0, 255]) }

  it('round-trips a record through binary, decoding into plain maps', () => {
    const bytes = codec.encode(reading, undefined)
    expect(Buffer.isBuffer(bytes)).toBe(true)
    const decoded = codec.decode(bytes, undefined) as Record<string, any>
    expect(decoded).toEqual(reading)
    expect(plainProto(decoded)).toBe(true)
    expect(plainProto(decoded.loc)).toBe(true)
  })

  it('fills fields that have a default and decodes a named type given as the message type', () => {
    const { note: _n, raw: _r, ...withoutDefaults } = reading
    expect(codec.decode(codec.encode(withoutDefaults, undefined), undefined)).toEqual({ ...withoutDefaults, note: null, raw: Buffer.alloc(0) })
    const loc = codec.encode({ lat: 1, lon: 2 }, 'Loc')
    expect(codec.decode(loc, 'iot.Loc')).toEqual({ lat: 1, lon: 2 })
    expect(() => codec.decode(loc, 'Nope')).toThrow('no avro type named Nope in the schema')
  })

  it('names the field that does not fit when encoding', () => {
    expect(() => codec.encode({ ...reading, temp: 'hot' }, undefined)).toThrow('field temp: expected "double", got "hot"')
    expect(() => codec.encode({ ...reading, loc: { lat: 1 } }, undefined)).toThrow('field loc.lon: expected "float", got nothing')
  })

  it('refuses truncated data and trailing bytes', () => {
    const bytes = codec.encode(reading, undefined)
    expect(() => codec.decode(bytes.subarray(0, 5), undefined)).toThrow('truncated buffer')
    expect(() => codec.decode(Buffer.concat([bytes, Buffer.from([1])]), undefined)).toThrow('trailing data')
  })

  it.each([
    ['a missing comma', '{\n  "type": "record",\n  "name": "S"\n  "fields": []\n}', /not valid JSON: Expected ',' or '}' after property value at line 4, column 3/],
    ['text cut short', '{\n  "type": "record",', /not valid JSON: Expected double-quoted property name at line 2, column 20/],
    ['nothing after the opening brace', '{', /not valid JSON: .* at line 1/],
    ['an unknown type', '{"type": "record", "name": "S", "fields": [{"name": "a", "type": "flaot"}]}', /invalid avro schema: undefined type name: flaot/],
    ['a record without fields', '{"type": "record", "name": "S"}', /invalid avro schema/]
  ])('refuses a schema with %s, saying where', (_what, text, message) => {
    expect(() => compileAvro(text)).toThrow(SchemaCompileError)
    expect(() => compileAvro(text)).toThrow(message)
  })
})

describe('protobuf', () => {
  const codec = compileProtobuf(SENSOR_PROTO)
  const reading = { id: 's1', temp: 31.5, count: 7, tags: ['a', 'b'], loc: { lat: 1.5, lon: -2.25 }, kind: 'OUTDOOR', raw: Buffer.from([0, 255]) }

  it('round-trips a message through binary, decoding into plain maps with enum names', () => {
    const bytes = codec.encode(reading, 'Sensor')
    const decoded = codec.decode(bytes, 'Sensor') as Record<string, any>
    expect(decoded).toEqual(reading)
    expect(plainProto(decoded)).toBe(true)
    expect(plainProto(decoded.loc)).toBe(true)
    expect(codec.decode(bytes, 'iot.Sensor')).toEqual(reading)
  })

  it('gives every field of a sparse message, with proto3 defaults', () => {
    expect(codec.decode(codec.encode({ temp: 20 }, 'Sensor'), 'Sensor')).toEqual({ id: '', temp: 20, count: 0, tags: [], loc: null, kind: 'INDOOR', raw: Buffer.alloc(0) })
  })

  it('needs the message type when the file defines more than one', () => {
    expect(() => codec.decode(Buffer.alloc(0), undefined)).toThrow('the schema defines 2 message types (Sensor, Loc): give the message type as the third argument')
    expect(() => codec.decode(Buffer.alloc(0), 'Nope')).toThrow('no message type Nope in the schema; it defines Sensor, Loc')
    const single = compileProtobuf('syntax = "proto3"; message Only { int32 n = 1; }')
    expect(single.decode(single.encode({ n: 5 }, undefined), undefined)).toEqual({ n: 5 })
  })

  it('checks field types when encoding instead of turning them into zeros', () => {
    expect(() => codec.encode({ count: 'many' }, 'Sensor')).toThrow('field count: expected an integer (int64), got "many"')
    expect(() => codec.encode({ temp: '31' }, 'Sensor')).toThrow('field temp: expected a number (double), got "31"')
    expect(() => codec.encode({ kind: 'ATTIC' }, 'Sensor')).toThrow('field kind: expected one of INDOOR, OUTDOOR, got "ATTIC"')
    expect(() => codec.encode({ loc: { lat: 'n' } }, 'Sensor')).toThrow('field loc.lat: expected a number (float), got "n"')
    expect(() => codec.encode({ tags: 'a' }, 'Sensor')).toThrow('field tags: expected an array, got "a"')
    expect(() => codec.encode('text', 'Sensor')).toThrow('value: expected a map for message Sensor, got "text"')
  })

  it('takes text for bytes and decimal text for 64-bit integers', () => {
    expect(codec.decode(codec.encode({ raw: 'hi', count: '9007199254740991' }, 'Sensor'), 'Sensor')).toMatchObject({ raw: Buffer.from('hi'), count: 9007199254740991 })
  })

  it('refuses bytes that are not a message', () => {
    expect(() => codec.decode(Buffer.from([0xff, 0xff, 0xff]), 'Sensor')).toThrow()
  })

  it.each([
    ['a missing semicolon', 'syntax = "proto3";\nmessage A {\n  int32 x = 1\n  string y = 2;\n}\n', /invalid protobuf schema: illegal token 'string', ';' expected \(line 4\)/],
    ['an unknown field type', 'syntax = "proto3";\nmessage A {\n  foo x = 1;\n}\n', /invalid protobuf schema: no such Type or Enum 'foo' in Type .A \(line 3\)/],
    ['no message at all', 'syntax = "proto3";\n', /it defines no message type/]
  ])('refuses a .proto with %s, saying where', (_what, text, message) => {
    expect(() => compileProtobuf(text)).toThrow(SchemaCompileError)
    expect(() => compileProtobuf(text)).toThrow(message)
  })
})
