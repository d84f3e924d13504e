import {
  applyFunction, ConversionError, FunctionUnavailableError, listFunctions, lookupFunction, lookupOperator, registerFunction
} from '../../../rules/funcs/index.js'

/** Every function of the spec's table with the argument counts of EMQ X 4.4's forms. */
const SPEC_TABLE: Record<string, [number, number]> = {
  abs: [1, 1], cos: [1, 1], cosh: [1, 1], acos: [1, 1], acosh: [1, 1], sin: [1, 1], sinh: [1, 1], asin: [1, 1],
  asinh: [1, 1], tan: [1, 1], tanh: [1, 1], atan: [1, 1], atanh: [1, 1], ceil: [1, 1], floor: [1, 1], round: [1, 1],
  exp: [1, 1], power: [2, 2], sqrt: [1, 1], fmod: [2, 2], log: [1, 1], log10: [1, 1], log2: [1, 1],
  str: [1, 1], str_utf8: [1, 1], bool: [1, 1], int: [1, 1], float: [1, 1], map: [1, 1],
  lower: [1, 1], upper: [1, 1], trim: [1, 1], ltrim: [1, 1], rtrim: [1, 1], reverse: [1, 1], strlen: [1, 1],
  substr: [2, 3], split: [2, 3], map_get: [2, 3], map_put: [3, 3], nth: [2, 2], md5: [1, 1], sha: [1, 1], sha256: [1, 1],
  base64_encode: [1, 1], base64_decode: [1, 1], json_encode: [1, 1], json_decode: [1, 1],
  schema_encode: [2, 3], schema_decode: [2, 3],
  contains_topic: [2, 3], contains_topic_match: [2, 3]
}

/** The rest of EMQ X 4.4's library (and join_to_string from EMQ X 5). */
const LIBRARY: Record<string, [number, number]> = {
  bitnot: [1, 1], bitand: [2, 2], bitor: [2, 2], bitxor: [2, 2], bitsl: [2, 2], bitsr: [2, 2], bitsize: [1, 1], subbits: [2, 6],
  float2str: [2, 2], bin2hexstr: [1, 1], hexstr2bin: [1, 1], is_null: [1, 1], is_not_null: [1, 1], is_str: [1, 1],
  is_bool: [1, 1], is_int: [1, 1], is_float: [1, 1], is_num: [1, 1], is_map: [1, 1], is_array: [1, 1],
  concat: [2, 2], tokens: [2, 3], sprintf: [1, Infinity], sprintf_s: [2, 2], pad: [2, 4], replace: [3, 4],
  regex_match: [2, 2], regex_replace: [3, 3], ascii: [1, 1], find: [2, 3], join_to_string: [1, 2],
  map_new: [0, 0], mget: [2, 3], mput: [3, 3], mod: [2, 2], length: [1, 1], sublist: [2, 3], first: [1, 1], last: [1, 1], contains: [2, 2],
  gzip: [1, 1], gunzip: [1, 1], zip: [1, 1], unzip: [1, 1], zip_compress: [1, 1], zip_uncompress: [1, 1],
  random: [0, 0], uuid_v4: [0, 0], uuid_v4_no_hyphen: [0, 0],
  now_timestamp: [0, 1], now_rfc3339: [0, 1], unix_ts_to_rfc3339: [1, 2], rfc3339_to_unix_ts: [1, 2],
  format_date: [3, 4], date_to_unix_ts: [3, 4], timezone_to_second: [1, 1],
  msgid: [0, 0], qos: [0, 0], flags: [0, 0], flag: [1, 1], topic: [0, 1], clientid: [0, 0], clientip: [0, 0],
  peerhost: [0, 0], username: [0, 0], payload: [0, 1], null: [0, 0], eq: [2, 2],
  kv_store_get: [1, 2], kv_store_put: [2, 2], kv_store_del: [1, 1]
}

describe('the function table', () => {
  it.each(Object.entries({ ...SPEC_TABLE, ...LIBRARY }))('has %s with its arities', (name, [min, max]) => {
    const f = lookupFunction(name)
    expect(f).toBeDefined()
    expect([f?.minArgs, f?.maxArgs]).toEqual([min, max])
  })

  it('resolves names case-insensitively and knows nothing else', () => {
    expect(lookupFunction('MAP_GET')).toBe(lookupFunction('map_get'))
    expect(lookupFunction('Str')?.name).toBe('str')
    expect(lookupFunction('term_encode')).toBeUndefined()
    expect(lookupFunction('no_such_function')).toBeUndefined()
    expect(lookupFunction('+')).toBeUndefined()
  })

  it('lists every function once, sorted, with lower-case names and sane arities', () => {
    const all = listFunctions()
    expect(all.map((f) => f.name)).toEqual([...new Set(all.map((f) => f.name))].sort())
    for (const f of all) {
      expect(f.name).toBe(f.name.toLowerCase())
      expect(f.minArgs).toBeLessThanOrEqual(f.maxArgs)
    }
    expect(all.length).toBe(Object.keys({ ...SPEC_TABLE, ...LIBRARY }).length)
  })

  it('marks exactly the event readers as contextual', () => {
    const contextual = listFunctions().filter((f) => f.contextual === true).map((f) => f.name)
    expect(contextual.sort()).toEqual(['clientid', 'clientip', 'flag', 'flags', 'msgid', 'payload', 'peerhost', 'qos', 'topic', 'username'])
  })

  it('gives the arithmetic operators separately', () => {
    expect(lookupOperator('DIV')?.fn(7, 2)).toBe(3)
    expect(lookupOperator('%')).toBeUndefined()
  })
})

describe('schema_encode and schema_decode', () => {
  it('fail clearly until the schema registry registers them', () => {
    const f = lookupFunction('schema_decode')
    expect(f).toBeDefined()
    expect(() => f?.fn('id', 'data')).toThrow(FunctionUnavailableError)
    expect(() => f?.fn('id', 'data')).toThrow(/schema registry not available/)
  })

  it('are replaced by registerFunction, and restored by its undo', () => {
    const before = lookupFunction('schema_encode')
    const undo = registerFunction({ name: 'Schema_Encode', minArgs: 2, maxArgs: 3, fn: (id: unknown, v: unknown) => `${String(id)}:${JSON.stringify(v)}` })
    expect(lookupFunction('schema_encode')?.fn('s1', { a: 1 })).toBe('s1:{"a":1}')
    undo()
    expect(lookupFunction('schema_encode')).toBe(before)
  })

  it('registerFunction adds new names, and the undo removes them', () => {
    const undo = registerFunction({ name: 'my_fn', minArgs: 0, maxArgs: 0, fn: () => 42 })
    expect(applyFunction(lookupFunction('MY_FN')!, [], {})).toBe(42)
    undo()
    expect(lookupFunction('my_fn')).toBeUndefined()
  })
})

describe('failures', () => {
  it('are ConversionErrors naming the function and an EMQ X reason', () => {
    try {
      lookupFunction('int')?.fn('abc')
      throw new Error('did not throw')
    } catch (err) {
      expect(err).toBeInstanceOf(ConversionError)
      expect((err as ConversionError).fn).toBe('int')
      expect((err as ConversionError).reason).toBe('invalid_number')
      expect((err as Error).message).toMatch(/^int: cannot convert string "abc" to an integer/)
    }
  })
})
