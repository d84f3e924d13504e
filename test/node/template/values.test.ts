/** `${key}` placeholders: nested keys, JSON strings on the way, typed whole-value placeholders. */
import { compileText, fillString, fillTemplate, fillText, lookup, renderText } from '../../../node/template/index.js'

const data = { clientid: 'c1', qos: 1, payload: '{"x":{"y":7}}', map: { a: [1, 2] }, empty: null }

describe('placeholders', () => {
  it('fills keys, nested paths and paths into a JSON payload', () => {
    expect(fillString('${clientid}/${qos}', data)).toBe('c1/1')
    expect(fillString('x=${payload.x.y}', data)).toBe('x=7')
    expect(fillString('${map}', data)).toBe('{"a":[1,2]}')
    expect(fillString('[${missing}][${empty}]', data)).toBe('[][]')
    expect(fillString('no placeholder', data)).toBe('no placeholder')
  })

  it('passes each filled value, not the template\'s own text, through an encoder (a URL path\'s)', () => {
    expect(fillString('/d/${clientid}?t=${topic}&fixed=a/b', { clientid: 'a b/c', topic: 't/1&x=2' }, encodeURIComponent)).toBe('/d/a%20b%2Fc?t=t%2F1%26x%3D2&fixed=a/b')
  })

  it('keeps the type of a value that fills a whole template string', () => {
    expect(fillTemplate({ id: '${clientid}', q: '${qos}', text: 'q=${qos}', nested: ['${map.a}'] }, data))
      .toEqual({ id: 'c1', q: 1, text: 'q=1', nested: [[1, 2]] })
  })

  it('looks up a key containing a dot before a nested path', () => {
    expect(lookup({ 'a.b': 1, a: { b: 2 } }, 'a.b')).toBe(1)
    expect(lookup({ a: { b: 2 } }, ' a.b ')).toBe(2)
  })

  it('fills a compiled text as fillString and fillTemplate fill the text', () => {
    const texts = ['${clientid}/${qos}', 'x=${payload.x.y}', '${map}', '[${missing}][${empty}]', 'no placeholder', '${ qos }', '${qos}', 'a${clientid}b${clientid}c', '${unclosed', '${}', '']
    for (const text of texts) {
      expect(renderText(compileText(text), data)).toBe(fillString(text, data))
      expect(fillText(compileText(text), data)).toEqual(fillTemplate(text, data))
    }
    expect(fillText(compileText('${qos}'), data)).toBe(1)
    expect(fillText(compileText('${missing}'), data)).toBeNull()
  })
})
