/**
 * svc_backend_influxdb without a server: line protocol escaping (measurement: `,` and space;
 * tag keys and values, field keys: `,`, `=` and space; string field values: `"` and `\`),
 * what cannot be written refused, field typing (`int_suffix`), the action's point from
 * selected data, timestamps in each unit, and UDP datagrams. test/e2e/data-influxdb.test.ts
 * reads the same escapes back from a real InfluxDB.
 */
import { escapeKey, escapeMeasurement, fieldValue, LineError, nodeTimeNs, quoteString, renderPoint, timestampOf } from '../../../plugins/backend_influxdb/line-protocol.js'
import { compileInfluxAction, influxRow } from '../../../plugins/backend_influxdb/action.js'
import { lineOf } from '../../../plugins/backend_influxdb/write.js'
import { datagramsOf } from '../../../plugins/backend_influxdb/udp-client.js'
import { ApiError } from '../../../node/errors.js'

describe('line protocol escaping', () => {
  it.each([
    ['cpu', 'cpu'],
    ['cpu load', 'cpu\\ load'],
    ['a,b', 'a\\,b'],
    ['a=b', 'a=b'],
    ['"q"', '"q"'],
    ['back\\slash', 'back\\slash']
  ])('measurement %j is written %j', (given, written) => {
    expect(escapeMeasurement(given)).toBe(written)
  })

  it.each([
    ['host', 'host'],
    ['room 1', 'room\\ 1'],
    ['a,b', 'a\\,b'],
    ['k=v', 'k\\=v'],
    ['all , = ', 'all\\ \\,\\ \\=\\ '],
    ['"q"', '"q"']
  ])('tag key, tag value or field key %j is written %j', (given, written) => {
    expect(escapeKey('tag key', given)).toBe(written)
  })

  it.each([
    ['plain', '"plain"'],
    ['say "hi"', '"say \\"hi\\""'],
    ['C:\\dir', '"C:\\\\dir"'],
    ['\\"', '"\\\\\\""'],
    ['a,b c=d', '"a,b c=d"'],
    ['two\nlines', '"two\nlines"']
  ])('string field value %j is written %j', (given, written) => {
    expect(quoteString(given)).toBe(written)
  })

  it('refuses what line protocol cannot write: line breaks in names, a trailing backslash, a # measurement, an empty name', () => {
    expect(() => escapeMeasurement('a\nb')).toThrow(LineError)
    expect(() => escapeKey('tag key', 'a\rb')).toThrow(/line break/)
    expect(() => escapeKey('tag value', 'ends\\')).toThrow(/ends with a backslash/)
    expect(() => escapeMeasurement('#comment')).toThrow(/comment/)
    expect(() => escapeKey('field key', '')).toThrow(/empty/)
  })
})

describe('field values', () => {
  it('writes integers with the suffix (or as floats without), floats, booleans and strings', () => {
    expect(fieldValue('f', 42, 'i')).toBe('42i')
    expect(fieldValue('f', -7, 'i')).toBe('-7i')
    expect(fieldValue('f', 42, '')).toBe('42')
    expect(fieldValue('f', 2.5, 'i')).toBe('2.5')
    expect(fieldValue('f', 9007199254740993n, 'i')).toBe('9007199254740993i')
    expect(fieldValue('f', true, 'i')).toBe('true')
    expect(fieldValue('f', '42', 'i')).toBe('"42"')
  })

  it('refuses NaN and infinities', () => {
    expect(() => fieldValue('f', Number.NaN, 'i')).toThrow(LineError)
    expect(() => fieldValue('f', Number.POSITIVE_INFINITY, 'i')).toThrow(/Infinity/)
  })
})

describe('a point', () => {
  it('sorts tags, leaves out empty tag values, and needs a field', () => {
    expect(renderPoint({ measurement: 'm x', tags: [['z', '1'], ['a b', 'v,w'], ['e', '']], fields: [['t', 1.5], ['n', 3], ['s', 'q"']], intSuffix: 'i' }))
      .toBe('m\\ x,a\\ b=v\\,w,z=1 t=1.5,n=3i,s="q\\""')
    expect(() => renderPoint({ measurement: 'm', tags: [], fields: [], intSuffix: 'i' })).toThrow(/at least one/)
  })

  it('is filled from selected data: ${key} keeps the type, text is a string, absent fields are left out', () => {
    const t = compileInfluxAction({
      measurement: 'sensor_${clientid}',
      fields: { temp: '${payload.temp}', seq: '${payload.seq}', ok: '${payload.ok}', obj: '${payload.o}', note: 'from ${topic}', fixed: 5, missing: '${nope}' },
      tags: { client: '${clientid}', site: 'lab 1', empty: '${nope}' },
      timestamp: '${timestamp}'
    })
    const row = influxRow(t, { clientid: 'c,1', topic: 't/1', timestamp: 1700000000123, payload: '{"temp":21.5,"seq":7,"ok":true,"o":{"a":1}}' })
    expect(row).toEqual({
      p: [{ l: 'sensor_c\\,1,client=c\\,1,site=lab\\ 1 temp=21.5,seq=7i,ok=true,obj="{\\"a\\":1}",note="from t/1",fixed=5i', t: '1700000000123' }]
    })
  })

  it('takes the time from a key of the selection (EMQ X\'s Timestamp Key), or the node\'s clock, distinct per point', () => {
    const byKey = influxRow(compileInfluxAction({ measurement: 'm', fields: { v: 1 }, timestamp: 'ts' }), { ts: '1700000000' })
    expect(byKey.p[0].t).toBe('1700000000')
    const t = compileInfluxAction({ measurement: 'm', fields: { v: 1 } })
    const times = Array.from({ length: 1000 }, () => influxRow(t, {}).p[0].n as string)
    expect(new Set(times).size).toBe(1000)
    expect(BigInt(times[999]) > BigInt(times[0])).toBe(true)
    expect(Number(BigInt(times[0]) / 1_000_000n)).toBeCloseTo(Date.now(), -3)
    expect(nodeTimeNs() > BigInt(times[999])).toBe(true)
    // more points than microseconds: the nanoseconds count on past 999 into the next microsecond
    const many = Array.from({ length: 5000 }, () => influxRow(t, {}).p[0].n as string)
    for (let i = 1; i < many.length; i++) expect(BigInt(many[i]) > BigInt(many[i - 1])).toBe(true)
  })

  it('refuses a timestamp that is not a whole number, and params that cannot work (108)', () => {
    expect(timestampOf('')).toBeUndefined()
    expect(timestampOf(12)).toBe('12')
    expect(() => timestampOf('12.5')).toThrow(/not a whole number/)
    expect(() => timestampOf(1.5)).toThrow(LineError)
    const refused = (params: Record<string, unknown>): string => {
      try {
        compileInfluxAction(params)
      } catch (err) {
        expect(err).toBeInstanceOf(ApiError)
        expect((err as ApiError).code).toBe(108)
        return (err as Error).message
      }
      throw new Error('not refused')
    }
    expect(refused({ fields: { v: 1 } })).toMatch(/measurement/)
    expect(refused({ measurement: 'm' })).toMatch(/fields is required/)
    expect(refused({ measurement: 'm', fields: {} })).toMatch(/at least one/)
    expect(refused({ measurement: 'm', fields: { v: [1] } })).toMatch(/fields\.v/)
    expect(refused({ measurement: 'm', fields: { v: 1 }, int_suffix: 'x' })).toMatch(/int_suffix/)
  })

  it('writes the time in the unit the transport needs', () => {
    expect(lineOf({ l: 'm v=1', t: '1700000000123' }, 'ms', 'ns')).toBe('m v=1 1700000000123000000')
    expect(lineOf({ l: 'm v=1', t: '2' }, 'h', 'ns')).toBe('m v=1 7200000000000')
    expect(lineOf({ l: 'm v=1', t: '1700000000123' }, 'ms', 'ms')).toBe('m v=1 1700000000123')
    expect(lineOf({ l: 'm v=1', n: '1700000000123456789' }, 'ms', 'ms')).toBe('m v=1 1700000000123')
    expect(lineOf({ l: 'm v=1', n: '1700000000123456789' }, 'ms', 'ns')).toBe('m v=1 1700000000123456789')
  })
})

describe('UDP datagrams', () => {
  it('hold at most batch_size lines and the byte limit, in order, and refuse a line that fits in none', () => {
    const lines = Array.from({ length: 10 }, (_, i) => `m v=${i}i`)
    expect(datagramsOf(lines, 4).map((d) => d.toString())).toEqual([lines.slice(0, 4), lines.slice(4, 8), lines.slice(8)].map((l) => l.join('\n')))
    expect(datagramsOf(lines, 100, 20).map((d) => d.toString().split('\n').length)).toEqual([3, 3, 3, 1])
    expect(() => datagramsOf(['x'.repeat(30)], 10, 20)).toThrow(/does not fit/)
  })
})
