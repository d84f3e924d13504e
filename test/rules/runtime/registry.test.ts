/** Actions and resource types registered by code; both naming styles resolve. */
import { createBuiltInRegistry } from '../../../rules/engine.js'
import { BRIDGE_ACTIONS, BRIDGE_RESOURCE_TYPES } from '../../../plugins/bridge_mqtt/actions.js'
import { ApiError } from '../../../node/errors.js'

// svc_rule_engine's types and actions, and those svc_bridge_mqtt provides while it is loaded
const registry = createBuiltInRegistry()
for (const type of BRIDGE_RESOURCE_TYPES) registry.registerResourceType(type)
for (const action of BRIDGE_ACTIONS) registry.registerAction(action)

describe('the built-in registry', () => {
  it('resolves the short and the prefixed names to the same action', () => {
    for (const [short, long] of [['inspect', 'built_in:inspect_action'], ['republish', 'built_in:republish_action'], ['data_to_webserver', 'web_hook:data_to_webserver'], ['web_hook:event_action', 'event_action']]) {
      expect(registry.action(long)).toBe(registry.action(short))
    }
  })

  it('answers a not-found (404) naming the known actions for an unknown one', () => {
    expect(() => registry.action('nope')).toThrow(ApiError)
    expect(() => registry.action('nope')).toThrow(/action nope not found; known actions: inspect, republish/)
    try { registry.action('nope') } catch (err) { expect((err as ApiError).status).toBe(404) }
  })

  it('filters actions by the event they can serve', () => {
    const names = (hook?: string): string[] => registry.actions(hook).map(a => a.name)
    expect(names('message.publish')).toEqual(['inspect', 'republish', 'do_nothing', 'data_to_webserver', 'web_hook:event_action', 'web_hook:publish_action', 'data_to_mqtt_broker'])
    expect(names('client.connected')).not.toContain('web_hook:publish_action')
    expect(names('client.connected')).not.toContain('data_to_mqtt_broker')
    expect(names()).toHaveLength(7)
  })

  it('lists the resource types and the actions bound to each', () => {
    expect(registry.resourceTypes().map(t => t.name)).toEqual(['built_in', 'web_hook', 'bridge_mqtt', 'bridge_rpc'])
    expect(registry.actionsOfType('bridge_mqtt').map(a => a.name)).toEqual(['data_to_mqtt_broker'])
    expect(registry.actionsOfType('bridge_rpc').map(a => a.name)).toEqual(['data_to_mqtt_broker'])
    expect(registry.actionsOfType('web_hook').map(a => a.name)).toEqual(['data_to_webserver', 'web_hook:event_action', 'web_hook:publish_action'])
    expect(registry.actionsOfType('built_in')).toEqual([])
  })

  it('refuses registering a name twice', () => {
    expect(() => registry.registerAction({ ...registry.action('inspect') })).toThrow(/registered twice/)
    expect(() => registry.registerResourceType(registry.resourceType('web_hook'))).toThrow(/registered twice/)
  })
})
