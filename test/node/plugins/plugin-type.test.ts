import { pluginTypeOf } from '../../../node/plugins/index.js'

describe('plugin type', () => {
  it('types plugins as EMQ X 3.4 did: auth, protocol, bridge, backend, else feature', () => {
    const cases: Array<[string, string]> = [
      ['svc_auth_username', 'auth'], ['svc_auth_clientid', 'auth'], ['svc_auth_jwt', 'auth'],
      ['svc_coap', 'protocol'], ['svc_lwm2m', 'protocol'], ['svc_sn', 'protocol'], ['svc_stomp', 'protocol'],
      ['svc_bridge_mqtt', 'bridge'], ['svc_backend_redis', 'backend'],
      ['svc_retainer', 'feature'], ['svc_delayed_publish', 'feature'], ['svc_rule_engine', 'feature'],
      ['svc_management', 'feature'], ['svc_web_hook', 'feature'], ['svc_psk_file', 'feature']
    ]
    for (const [name, type] of cases) expect([name, pluginTypeOf({ name })]).toEqual([name, type])
  })

  it('lets a definition say its own type', () => {
    expect(pluginTypeOf({ name: 'svc_gateway_x', type: 'protocol' })).toBe('protocol')
  })
})
