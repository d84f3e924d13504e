/**
 * `svc_delayed_publish` (EMQ X 4's emqx_delayed_publish): `$delayed/<seconds>/<topic>`
 * publishes to `<topic>` after the delay. It taps the broker's publishes under `$delayed/` (broker.tapPublishes)
 * and publishes through the broker; unloading stops the timer and keeps the held messages.
 */
import type { ConfigSchema } from '../../node/config/index.js'
import type { StarlingNode } from '../../node/node.js'
import type { PluginDefinition } from '../../node/plugins/types.js'
import { VERSION } from '../../node/version.js'
import { DELAYED_TABLE, DelayedPublisher, type DelayedMessage } from './delayed-publisher.js'
import type { PublishMessage } from '../../node/mqtt/core.js'

/** Keys of `etc/plugins/svc_delayed_publish.conf`. */
export const DELAYED_CONFIG_SCHEMA = {
  'delayed.max_delayed_messages': {
    type: 'int',
    min: 0,
    default: '0',
    live: true,
    doc: 'Most delayed messages held at once; a delayed publish over it is dropped. 0: no limit.'
  }
} as const satisfies ConfigSchema

/** The node's delayed publisher while svc_delayed_publish is loaded (for stats and tests): found through the node's plugin manager. */
export function delayedPublisherOf (node: Pick<StarlingNode, 'services'>): DelayedPublisher | undefined {
  return (node.services.plugins.definition('svc_delayed_publish') as DelayedPublishPlugin).publisher
}

/** Publishes a due message through the MQTT core, as its original publisher. */
function publishThrough (node: StarlingNode, m: DelayedMessage): Promise<void> {
  const packet: PublishMessage = {
    cmd: 'publish', topic: m.topic, payload: m.payload, qos: m.qos, retain: m.retain, dup: false, clientId: m.clientId
  }
  if (m.properties !== undefined) packet.properties = { ...m.properties }
  return node.broker.core.publish(packet)
}

/** svc_delayed_publish of one node: the definition, with its publisher while loaded. */
export interface DelayedPublishPlugin extends PluginDefinition {
  readonly publisher: DelayedPublisher | undefined
}

/**
 * The `svc_delayed_publish` plugin of one node (plugins/index.ts creates one per node): its
 * publisher lives in this definition while loaded, not in a module shared by every node.
 */
export function createDelayedPublishPlugin (): DelayedPublishPlugin {
  let publisher: DelayedPublisher | undefined
  return {
    name: 'svc_delayed_publish',
    version: VERSION,
    description: 'Starling Delayed Publish',
    configSchema: DELAYED_CONFIG_SCHEMA,
    loadedByDefault: true,
    get publisher () { return publisher },
    async load ({ node, config, logger }) {
      const made = new DelayedPublisher({
        table: node.store.table<DelayedMessage>(DELAYED_TABLE),
        publish: (m) => publishThrough(node, m),
        logger,
        maxDelayedMessages: config['delayed.max_delayed_messages'] as number
      })
      made.start()
      const off = node.broker.tapPublishes('$delayed/', (event) => made.accept(event))
      publisher = made
      return {
        unload: async () => {
          off()
          made.stop()
          publisher = undefined
        }
      }
    }
  }
}
