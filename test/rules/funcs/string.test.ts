import { ConversionError } from '../../../rules/funcs/index.js'
import { call } from './call.js'


describe('case, trim, reverse, length', () => {
  it('change case of Unicode text', () => {
    expect(call('upper', 'straße')).toBe('STRASSE')
    expect(call('lower', Buffer.from('ÄB'))).toBe('äb')
  })

  it("trim Erlang's whitespace set, CRLF included", () => {
    expect(call('trim', ' \t\r\nabc\r\n \u2028')).toBe('abc')
    expect(call('rtrim', ' a ')).toBe(' a')
    expect(call('ltrim', '\u00a0a')).toBe('\u00a0a') // NBSP is not Erlang whitespace
  })

  it('count and reverse grapheme clusters', () => {
    expect(call('strlen', 'e\u0301x')).toBe(2)
    expect(call('strlen', 'a\r\nb')).toBe(3)
    expect(call('reverse', 'ab你')).toBe('你ba')
    expect(call('reverse', 'a\r\n')).toBe('\r\na')
  })

  it('refuse values that are not strings', () => {
    for (const f of ['lower', 'upper', 'trim', 'ltrim', 'rtrim', 'reverse', 'strlen']) {
      expect(() => call(f, 12)).toThrow(ConversionError)
      expect(() => call(f, undefined)).toThrow(ConversionError)
    }
  })
})

describe('substr', () => {
  it('slices graphemes from a 0-based start', () => {
    expect(call('substr', '你好世界', 1, 2)).toBe('好世')
    expect(call('substr', 'abc', 5)).toBe('')
    expect(call('substr', 'abc', 1, 10)).toBe('bc')
  })

  it('refuses negative offsets and lengths', () => {
    expect(() => call('substr', 'abc', -1)).toThrow(ConversionError)
    expect(() => call('substr', 'abc', 0, -1)).toThrow(ConversionError)
  })
})

describe('split', () => {
  it('has the all, leading and trailing forms, trimmed or not', () => {
    expect(call('split', 'a/b/c', '/', 'leading_notrim')).toEqual(['a', 'b/c'])
    expect(call('split', '/a', '/', 'leading_notrim')).toEqual(['', 'a'])
    expect(call('split', 'a/b/c/', '/', 'trailing')).toEqual(['a/b/c'])
    expect(call('split', 'abc', '/', 'leading')).toEqual(['abc'])
    expect(call('split', 'a::b::c', '::')).toEqual(['a', 'b', 'c'])
  })

  it('does not cut a CRLF pair, as Erlang graphemes do not', () => {
    expect(call('split', 'a\r\nb', '\n')).toEqual(['a\r\nb'])
    expect(call('split', 'a\r\nb', '\r\n')).toEqual(['a', 'b'])
  })

  it('refuses an unknown mode', () => {
    expect(() => call('split', 'a', '/', 'middle')).toThrow(ConversionError)
  })
})

describe('tokens, concat, pad, replace, find, ascii', () => {
  it('tokenises on a set of characters', () => {
    expect(call('tokens', 'a-b_c', '-_')).toEqual(['a', 'b', 'c'])
    expect(call('tokens', 'a\r\nb', ',', 'nocrlf')).toEqual(['a', 'b'])
    expect(() => call('tokens', 'a', ',', 'crlf')).toThrow(ConversionError)
  })

  it('concatenates two strings only', () => {
    expect(call('concat', Buffer.from('a'), 'b')).toBe('ab')
    expect(() => call('concat', 'a', 1)).toThrow(ConversionError)
  })

  it('pads leading, trailing and both, the extra one on the right', () => {
    expect(call('pad', 'ab', 5, 'leading', '0')).toBe('000ab')
    expect(call('pad', 'ab', 5, 'both')).toBe(' ab  ')
    expect(call('pad', '你', 3)).toBe('你  ')
    expect(call('pad', 'abc', 2)).toBe('abc')
    expect(() => call('pad', 'a', 3, 'center')).toThrow(ConversionError)
  })

  it('replaces all, the first or the last occurrence', () => {
    expect(call('replace', 'a-b-c', '-', '+', 'leading')).toBe('a+b-c')
    expect(call('replace', 'a-b-c', '-', '+', 'trailing')).toBe('a-b+c')
    expect(call('replace', 'abc', '', 'x')).toBe('abc')
  })

  it('finds the rest of a string from the first or last occurrence', () => {
    expect(call('find', 'a/b/c', '/', 'trailing')).toBe('/c')
    expect(call('find', 'abc', '')).toBe('abc')
  })

  it('gives the first byte of a string', () => {
    expect(call('ascii', 'é')).toBe(0xc3)
    expect(() => call('ascii', '')).toThrow(ConversionError)
  })

  it('joins an array with a separator (EMQ X 5)', () => {
    expect(call('join_to_string', ['a', 1, true])).toBe('a, 1, true')
    expect(call('join_to_string', '/', ['a', 'b'])).toBe('a/b')
    expect(() => call('join_to_string', 'a')).toThrow(ConversionError)
  })
})

describe('regex_match and regex_replace', () => {
  it('match anywhere in the subject', () => {
    expect(call('regex_match', 'abc123', '\\d+')).toBe(true)
    expect(call('regex_match', 'abc', '^b')).toBe(false)
    // the compiled pattern is reused: a global pattern must not keep its position
    expect(call('regex_match', 'abc123', '\\d+')).toBe(true)
  })

  it("replace with Erlang's & and \\N back-references", () => {
    expect(call('regex_replace', 'a1b22', '\\d+', '<&>')).toBe('a<1>b<22>')
    expect(call('regex_replace', 'john smith', '(\\w+) (\\w+)', '\\2 \\1')).toBe('smith john')
    expect(call('regex_replace', 'ab', '(a)', '\\g{1}\\g1\\&\\\\')).toBe('aa&\\b')
    expect(call('regex_replace', 'ab', 'a', '\\9')).toBe('b')
  })

  it('fail on an invalid pattern', () => {
    expect(() => call('regex_match', 'a', '(')).toThrow(ConversionError)
    expect(() => call('regex_replace', 'a', '[', 'x')).toThrow(/invalid regular expression/)
  })
})

describe('sprintf', () => {
  it('formats with io_lib:format control sequences', () => {
    expect(call('sprintf', 'hello ~s', 'world')).toBe('hello world')
    expect(call('sprintf', '~p,~w', 'a', 'a')).toBe('<<"a">>,<<97>>')
    expect(call('sprintf', '~p', { b: 1, a: [1, 2] })).toBe('#{<<"a">> => [1,2],<<"b">> => 1}')
    expect(call('sprintf', '~d~~~n', 42)).toBe('42~\n')
    expect(call('sprintf', '~.2f', 3.14159)).toBe('3.14')
    expect(call('sprintf', '~5s|~-5s|', 'ab', 'cd')).toBe('   ab|cd   |')
    expect(call('sprintf', '~5..0B', 42)).toBe('00042')
    expect(call('sprintf', '~.16B ~.16b ~.16#', 255, 255, 255)).toBe('FF ff 16#FF')
    expect(call('sprintf', '~p ~p ~p', 1.5, undefined, true)).toBe('1.5 undefined true')
    expect(call('sprintf', '~c', 97)).toBe('a')
    expect(call('sprintf', '~e', 1.5)).toBe('1.50000e+0')
    expect(call('sprintf', 'no args')).toBe('no args')
  })

  it('sprintf_s takes its arguments as one array', () => {
    expect(call('sprintf_s', '~s-~p', ['a', 1])).toBe('a-1')
    expect(() => call('sprintf_s', '~s', 'a')).toThrow(ConversionError)
  })

  it('fails when arguments and format disagree', () => {
    expect(() => call('sprintf', '~s ~s', 'a')).toThrow(ConversionError)
    expect(() => call('sprintf', '~s', 'a', 'b')).toThrow(ConversionError)
    expect(() => call('sprintf', '~d', 1.5)).toThrow(ConversionError)
    expect(() => call('sprintf', '~s', { a: 1 })).toThrow(ConversionError)
    expect(() => call('sprintf', '~q', 1)).toThrow(ConversionError)
  })
})
