/**
 * A data-integration plugin's definition (`svc_backend_<name>`, `svc_bridge_<name>`): not loaded
 * by default, no config file of its own (a resource's config holds the server), and while loaded
 * its resource types and actions in the rule engine, withdrawn by its unload.
 */
import { VERSION } from '../../../node/version.js'
import type { ActionDefinition, ResourceTypeDefinition } from '../../../rules/types.js'
import type { StarlingPlugin } from '../parts.js'

/** What {@link dataPlugin} is given. */
export interface DataPluginSpec {
  name: string
  description: string
  /** `backend` or `bridge` (what `plugins list` shows). */
  type: 'backend' | 'bridge'
  types: ResourceTypeDefinition[]
  actions: ActionDefinition[]
}

/** The plugin providing `spec.types` and `spec.actions` while loaded. */
export function dataPlugin (spec: DataPluginSpec): StarlingPlugin {
  return {
    name: spec.name,
    version: VERSION,
    description: spec.description,
    type: spec.type,
    configSchema: {},
    loadedByDefault: false,
    async load ({ parts }) {
      const withdraw = parts.rules.provide(spec.types, spec.actions)
      return { unload: async () => { withdraw() } }
    }
  }
}
