/**
 * Action params and resource configs checked against their specs: 107 for a missing
 * required parameter, 108 for a wrong type, a value outside the enum or a bad format;
 * defaults filled in.
 */
import { checkParams, paramDuration } from '../../../rules/params.js'
import { republishAction } from '../../../rules/actions/built-in.js'
import { webHookResourceType } from '../../../rules/actions/web-hook.js'
import { ApiError } from '../../../node/errors.js'

function codeOf (fn: () => unknown): number | undefined {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError)
    return (err as ApiError).code
  }
  return undefined
}

describe('checkParams', () => {
  it('fills the defaults of republish', () => {
    expect(checkParams(republishAction.params, { target_topic: 'a/b' }, 'action republish'))
      .toEqual({ target_topic: 'a/b', target_qos: 0, target_retain: false, payload_tmpl: '${payload}' })
  })

  it('refuses a missing required parameter with 107, naming it', () => {
    expect(codeOf(() => checkParams(republishAction.params, {}, 'action republish'))).toBe(107)
    expect(() => checkParams(republishAction.params, {}, 'action republish')).toThrow(/missing parameter target_topic/)
  })

  it('refuses a wrong type, a value outside the enum and a bad topic with 108', () => {
    expect(codeOf(() => checkParams(republishAction.params, { target_topic: 5 }, 'a'))).toBe(108)
    expect(codeOf(() => checkParams(republishAction.params, { target_topic: 't', target_qos: 3 }, 'a'))).toBe(108)
    expect(codeOf(() => checkParams(republishAction.params, { target_topic: 't', target_qos: 1.5 }, 'a'))).toBe(108)
    expect(codeOf(() => checkParams(republishAction.params, { target_topic: 't/#' }, 'a'))).toBe(108)
    expect(codeOf(() => checkParams(republishAction.params, 'x', 'a'))).toBe(108)
  })

  it('accepts ${key} placeholders in a topic', () => {
    expect(checkParams(republishAction.params, { target_topic: 'out/${clientid}' }, 'a').target_topic).toBe('out/${clientid}')
  })

  it('checks a web_hook config: url required and http(s), headers an object, method from the list', () => {
    expect(checkParams(webHookResourceType.params, { url: 'http://127.0.0.1:9/x' }, 'r')).toEqual({
      url: 'http://127.0.0.1:9/x',
      connect_timeout: '5s',
      request_timeout: '5s',
      pool_size: 8,
      enable_pipelining: true,
      cacertfile: '',
      certfile: '',
      keyfile: '',
      verify: false,
      server_name_indication: '',
      tls_version: ''
    })
    expect(codeOf(() => checkParams(webHookResourceType.params, {}, 'r'))).toBe(107)
    expect(codeOf(() => checkParams(webHookResourceType.params, { url: 'ftp://x' }, 'r'))).toBe(108)
    expect(codeOf(() => checkParams(webHookResourceType.params, { url: 'not a url' }, 'r'))).toBe(108)
    expect(codeOf(() => checkParams(webHookResourceType.params, { url: 'http://x', headers: [] }, 'r'))).toBe(108)
    expect(codeOf(() => checkParams(webHookResourceType.params, { url: 'http://x', method: 'FETCH' }, 'r'))).toBe(108)
  })

  it('takes a duration as EMQ X\'s text or as milliseconds (older stored configs), and refuses anything else with 108', () => {
    for (const value of ['5s', '1m30s', '500ms', '2000', 2000, 0]) {
      expect(checkParams(webHookResourceType.params, { url: 'http://x', request_timeout: value }, 'r').request_timeout).toBe(value)
    }
    expect(['5s', '1m30s', '500ms', '2000', 2000].map(paramDuration)).toEqual([5000, 90000, 500, 2000, 2000])
    for (const value of ['soon', '5 parsecs', -1, true, {}]) {
      expect(codeOf(() => checkParams(webHookResourceType.params, { url: 'http://x', connect_timeout: value }, 'r'))).toBe(108)
    }
  })
})
