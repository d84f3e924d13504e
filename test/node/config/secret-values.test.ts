/**
 * Credentials inside values (node/config/secret-values.ts): a URL's userinfo and credential
 * query values, `name=value` lists and request headers are shown masked, and a masked value
 * sent back keeps the stored credentials.
 */
import {
  maskConfigValue, maskHeaders, maskPairs, maskUrl, restoreConfigValue, restoreHeaders, restorePairs, restoreUrl,
  type ConfigSchema
} from '../../../node/config/index.js'

describe('maskUrl', () => {
  it.each([
    ['http://127.0.0.1:80/mqtt/auth', 'http://127.0.0.1:80/mqtt/auth'],
    ['https://h/p?token=abc&x=1', 'https://h/p?token=******&x=1'],
    ['https://h/p?password=a&secret=b&access_token=c&api_key=d&key=e&sig=f#frag', 'https://h/p?password=******&secret=******&access_token=******&api_key=******&key=******&sig=******#frag'],
    ['https://user:pass@h:8080/p?q=1', 'https://******@h:8080/p?q=1'],
    ['https://tokenonly@h/', 'https://******@h/'],
    ['http://h/p?username=%u&password=%P', 'http://h/p?username=%u&password=%P'],
    ['http://h/p?Token=', 'http://h/p?Token='],
    ['not a url?token=x', 'not a url?token=******']
  ])('shows %s as %s', (url, shown) => {
    expect(maskUrl(url)).toBe(shown)
  })

  it('keeps the stored credentials when the masked URL comes back, and takes a new one', () => {
    const stored = 'https://u:p@h/p?token=abc&x=1'
    expect(restoreUrl(maskUrl(stored), stored)).toBe(stored)
    expect(restoreUrl('https://******@other/p?token=******&x=2', stored)).toBe('https://u:p@other/p?token=abc&x=2')
    expect(restoreUrl('https://h/p?token=new', stored)).toBe('https://h/p?token=new')
  })
})

describe('name=value lists and headers', () => {
  it('masks credential values that are not placeholders', () => {
    expect(maskPairs('clientid=%c,username=%u,password=%P')).toBe('clientid=%c,username=%u,password=%P')
    expect(maskPairs('clientid=%c,client_secret=s3,token=${t}')).toBe('clientid=%c,client_secret=******,token=${t}')
    expect(restorePairs('clientid=%c,client_secret=******', 'clientid=%c,client_secret=s3')).toBe('clientid=%c,client_secret=s3')
  })

  it('masks every header value but content-type and accept, and restores them', () => {
    const stored = { Authorization: 'Bearer t', 'content-type': 'application/json', 'x-api-key': 'k' }
    const shown = maskHeaders(stored)
    expect(shown).toEqual({ Authorization: '******', 'content-type': 'application/json', 'x-api-key': '******' })
    expect(restoreHeaders(shown, stored)).toEqual(stored)
    expect(restoreHeaders({ ...shown, 'x-api-key': 'new' }, stored)).toEqual({ ...stored, 'x-api-key': 'new' })
  })
})

describe('plugin keys', () => {
  const schema: ConfigSchema = {
    'auth.http.auth_req.url': { type: 'string', live: false, doc: '', secretParts: 'url' },
    'auth.http.auth_req.headers.<name>': { type: 'string', live: false, doc: '', secretParts: 'header' },
    'auth.http.auth_req.params': { type: 'string', live: false, doc: '', secretParts: 'pairs' },
    'auth.x.password': { type: 'string', live: false, doc: '', secret: true },
    'auth.x.server': { type: 'string', live: false, doc: '' }
  }

  it('shows each kind masked', () => {
    expect(maskConfigValue(schema, 'auth.http.auth_req.url', 'http://h/a?token=t')).toBe('http://h/a?token=******')
    expect(maskConfigValue(schema, 'auth.http.auth_req.headers.authorization', 'Bearer t')).toBe('******')
    expect(maskConfigValue(schema, 'auth.http.auth_req.headers.content_type', 'application/json')).toBe('application/json')
    expect(maskConfigValue(schema, 'auth.http.auth_req.params', 'secret=s,u=%u')).toBe('secret=******,u=%u')
    expect(maskConfigValue(schema, 'auth.x.password', 'p')).toBe('******')
    expect(maskConfigValue(schema, 'auth.x.password', '')).toBe('')
    expect(maskConfigValue(schema, 'auth.x.server', 'h:1?token=t')).toBe('h:1?token=t')
  })

  it('leaves a key as it is when what was shown is sent back, and restores masked parts of a change', () => {
    expect(restoreConfigValue(schema, 'auth.x.password', '******', 'p')).toBeUndefined()
    expect(restoreConfigValue(schema, 'auth.x.password', 'new', 'p')).toBe('new')
    expect(restoreConfigValue(schema, 'auth.http.auth_req.headers.authorization', '******', 'Bearer t')).toBeUndefined()
    expect(restoreConfigValue(schema, 'auth.http.auth_req.url', 'http://h/a?token=******', 'http://h/a?token=t')).toBeUndefined()
    expect(restoreConfigValue(schema, 'auth.http.auth_req.url', 'http://h2/a?token=******', 'http://h/a?token=t')).toBe('http://h2/a?token=t')
    expect(restoreConfigValue(schema, 'auth.http.auth_req.params', 'secret=******,c=%c', 'secret=s,u=%u')).toBe('secret=s,c=%c')
  })
})
