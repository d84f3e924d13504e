/**
 * `svc_retainer` (EMQ X's emqx_retainer): stores retained messages under the limits of
 * `etc/plugins/svc_retainer.conf`. Unloaded, the node keeps no new retained messages and
 * delivers none, as EMQ X without emqx_retainer; what was stored stays and comes back
 * when the plugin is loaded again.
 */
import type { ConfigSchema } from '../../node/config/index.js'
import { PERSISTENCE_TABLES } from '../../node/mqtt/persistence.js'
import type { StarlingNode } from '../../node/node.js'
import type { PluginDefinition } from '../../node/plugins/types.js'
import { VERSION } from '../../node/version.js'
import { Retainer, type RetainerPolicy, type RetainerStorage } from './retainer.js'

/** Keys of `etc/plugins/svc_retainer.conf`. */
export const RETAINER_CONFIG_SCHEMA = {
  'retainer.storage_type': {
    type: 'enum',
    values: ['ram', 'disc', 'disc_only'],
    default: 'disc',
    live: true,
    doc: 'Where retained messages are kept: ram (memory only, lost on restart), disc (memory and the node\'s store), disc_only (same as disc).'
  },
  'retainer.max_retained_messages': {
    type: 'int',
    min: 0,
    default: '0',
    live: true,
    doc: 'Most retained messages kept; over it a new topic is not stored (replacing a stored topic still works). 0: no limit.'
  },
  'retainer.max_payload_size': {
    type: 'size',
    min: 0,
    default: '1MB',
    live: true,
    doc: 'Largest payload of a retained message; a larger one is delivered but not stored. 0: no limit.'
  },
  'retainer.expiry_interval': {
    type: 'duration',
    min: 0,
    default: '0',
    live: true,
    doc: 'How long a retained message without its own MQTT 5 Message Expiry Interval is kept. 0: forever.'
  }
} as const satisfies ConfigSchema

/** The policy from a loaded `svc_retainer.conf`. */
export function retainerPolicyFrom (config: Record<string, unknown>): RetainerPolicy {
  return {
    storage: config['retainer.storage_type'] as RetainerStorage,
    maxRetainedMessages: config['retainer.max_retained_messages'] as number,
    maxPayloadSize: config['retainer.max_payload_size'] as number,
    expiryIntervalMs: config['retainer.expiry_interval'] as number
  }
}

/** svc_retainer of one node: the definition, with the retainer it attached. */
export interface RetainerPlugin extends PluginDefinition {
  /** The node's retainer, from `attach` to its detach. */
  readonly retainer: Retainer | undefined
}

/**
 * The `svc_retainer` plugin of one node (plugins/index.ts creates one per node): its retainer
 * lives in this definition, from `attach` to its detach, not in a module shared by every
 * node of the process.
 */
export function createRetainerPlugin (): RetainerPlugin {
  let retainer: Retainer | undefined
  return {
    name: 'svc_retainer',
    version: VERSION,
    description: 'Starling Retainer',
    configSchema: RETAINER_CONFIG_SCHEMA,
    loadedByDefault: true,
    get retainer () { return retainer },
    async attach (node) {
      if (retainer !== undefined) throw new Error('svc_retainer is attached to a node already: create one definition per node')
      const made = new Retainer({
        persistence: node.broker.core.retained,
        discTable: node.store.table(PERSISTENCE_TABLES.retained),
        logger: node.logger.child({ component: 'plugins', plugin: 'svc_retainer' })
      })
      await made.attach()
      retainer = made
      return async () => {
        made.detach()
        retainer = undefined
      }
    },
    async load ({ config }) {
      const attached = retainer
      if (attached === undefined) throw new Error('svc_retainer is not attached to this node; load it through the plugin manager')
      await attached.activate(retainerPolicyFrom(config))
      return { unload: async () => attached.deactivate() }
    }
  }
}

/** The node's retainer while svc_retainer is attached (for stats and tests): found through the node's plugin manager. */
export function retainerOf (node: Pick<StarlingNode, 'services'>): Retainer | undefined {
  return (node.services.plugins.definition('svc_retainer') as RetainerPlugin).retainer
}
