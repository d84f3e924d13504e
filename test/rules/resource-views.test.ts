/**
 * A resource's config as the API and the CLI show it (rules/views.ts): credentials masked by
 * its type's params, or guessed from the keys' names when the type is unknown on this node;
 * and a config sent back as shown keeps the stored credentials.
 */
import { resourceView, restoreParams } from '../../rules/views.js'
import { webHookResourceType } from '../../rules/actions/web-hook.js'
import type { Resource } from '../../rules/types.js'

const hook: Resource = {
  id: 'web_hook:h',
  name: 'h',
  type: 'web_hook',
  config: { url: 'https://u:p@h/x?token=t&q=1', headers: { authorization: 'Bearer t', 'content-type': 'application/json' }, method: 'POST' },
  description: '',
  attrs: 'undefined',
  created_at: 0
}

it('masks a web_hook\'s URL credentials and header values, and keeps them when sent back', () => {
  const shown = resourceView(hook, undefined, webHookResourceType.params).config
  expect(shown).toEqual({ url: 'https://******@h/x?token=******&q=1', headers: { authorization: '******', 'content-type': 'application/json' }, method: 'POST' })
  expect(restoreParams(shown, hook.config, webHookResourceType.params)).toEqual(hook.config)
})

it('guesses the credentials of a resource whose type is unknown here', () => {
  const other = { ...hook, type: 'kafka_x', config: { ...hook.config, password: 'pw', sasl_secret: 's', keyfile: 'etc/k.pem', topic: 't' } }
  expect(resourceView(other).config).toEqual({
    url: 'https://******@h/x?token=******&q=1',
    headers: { authorization: '******', 'content-type': 'application/json' },
    method: 'POST',
    password: '******',
    sasl_secret: '******',
    keyfile: 'etc/k.pem',
    topic: 't'
  })
})
