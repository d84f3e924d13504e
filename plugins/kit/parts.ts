/**
 * What a plugin of the plugins room is given to extend the parts above the core, beside the
 * node itself (`PluginContext.parts`, and the second argument of `attach`). The core's plugin
 * manager passes it through without knowing its type; the composition root (bin/assemble.ts)
 * builds it for each node from that node's parts.
 *
 * Each registration returns the function that undoes it: a plugin removes in `unload` (or in
 * the function its `attach` returns) exactly what it added.
 */
import type { PluginDefinition } from '../../node/plugins/types.js'
import type { RuleProviders } from '../../rules/engine.js'
import type { ApiRouteTable } from '../../api/route-table.js'
import type { ApiPart } from '../../api/plugin.js'

export interface PluginParts {
  /**
   * The node's rule engine: the resource types and actions a plugin provides while it is
   * loaded (`GET /api/v3/resource_types` and `/actions` list them with their `provider`).
   */
  readonly rules: RuleProviders
  /**
   * The node's `/api/v3/`: `add`, a plugin's endpoints, added and removed with it; `app`, the
   * whole API (the core's routes, the plugins', and the caller's own table) as an Express
   * application behind an authentication step of the caller's, for a listener of its own
   * (svc_dashboard serves it on 18083 to signed-in dashboard users).
   */
  readonly api: Pick<ApiRouteTable, 'add'> & Pick<ApiPart, 'app'>
}

/** A plugin of the plugins room: a definition typed with the parts it may extend. */
export type StarlingPlugin = PluginDefinition<PluginParts>
