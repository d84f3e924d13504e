/**
 * The API part of one node: `svc_management` (EMQ X's emqx_management), the `/api/v3/` HTTP
 * API on `management.listener.http`. Loading the plugin starts the listener, unloading stops
 * it; the operations behind the API (node.rpc) and the CLI exist either way.
 *
 * The composition root (bin/assemble.ts) creates one part per node, giving it the node's rules
 * part (whose engine the rule and schema endpoints serve), and lists its plugin. The part
 * holds the running server: nothing looks it up from the node.
 *
 * Invariant: `server` is defined exactly while the plugin is loaded.
 */
import type { PluginDefinition } from '../node/plugins/types.js'
import type { StarlingNode } from '../node/node.js'
import { VERSION } from '../node/version.js'
import type { RuleEngine } from '../rules/engine.js'
import type express from 'express'
import type { ApiAuthenticator, ApiServer, ApiServerComponents } from './server.js'
import { startApiServer } from './listener.js'
import type { OpenApiAddition } from './openapi.js'
import { createRouteTable, joinRouteTables, type ApiNode, type ApiRouteTable } from './route-table.js'
import { API_ROUTES } from './routes/index.js'

/** Acceptors reported for the management HTTP listener: Node accepts on one event loop. */
const MANAGEMENT_ACCEPTORS = 1

/** What the API part is given by the composition root. */
export interface ApiPartInit {
  /**
   * The node's rules part (rules/part.ts `RulesPart`): its engine is read when the API
   * starts, after the parts' operations created it.
   */
  readonly rules: { readonly engine: RuleEngine }
}

/** The management API of one node, as the composition root assembles it. */
export interface ApiPart {
  /** `svc_management`: loading it starts the API listener, unloading stops it. */
  readonly plugin: PluginDefinition
  /** The API listener while svc_management is loaded; undefined otherwise. */
  readonly server: ApiServer | undefined
  /** The routes it serves: the core's, and those plugins add (`parts.api`, plugins/kit/parts.ts). */
  readonly routes: ApiRouteTable
  /**
   * The API as an Express application for another listener (svc_dashboard on 18083): every
   * route of {@link routes} (as it is at each request), then `extra`'s, with the same
   * handlers, bodies, index and envelopes, behind `authenticate` instead of the
   * applications' HTTP Basic. Nothing of it runs for a request `authenticate` refuses.
   * `openApi`: what the listener serves outside the tables, for its OpenAPI document.
   * Express loads with the first call (api/server.ts), so a listener asks for it at its first
   * request.
   */
  app: (node: ApiNode & Pick<StarlingNode, 'logger'>, authenticate: ApiAuthenticator, extra?: ApiRouteTable, openApi?: OpenApiAddition) => Promise<express.Express>
}

/**
 * What the server and its handlers get of the node the plugin is loaded into. `node` is the
 * node itself, seen through the narrow `ApiNode` type: its `config` is replaced when the
 * configs API changes a key, and the handlers must read the current one.
 */
function serverComponents (node: ApiNode & Pick<StarlingNode, 'logger'>, engine: RuleEngine): ApiServerComponents {
  return { node, rules: { engine, rpc: node.rpc, name: node.name }, logger: node.logger }
}

/** An API part for one node; nothing listens until its plugin loads. */
export function createApiPart (init: ApiPartInit): ApiPart {
  let server: ApiServer | undefined
  const routes = createRouteTable(API_ROUTES)
  const plugin: PluginDefinition = {
    name: 'svc_management',
    version: VERSION,
    description: 'Starling Management API and CLI',
    configSchema: {},
    loadedByDefault: true,
    async load ({ node }) {
      const started = await startApiServer(serverComponents(node, init.rules.engine), routes)
      // every listener off: loaded (the CLI's operations stay), serving nothing
      if (started === undefined) return { unload: async () => {} }
      server = started
      const unreport = node.listenerBoard.add(() => ({
        protocol: started.protocol,
        listen_on: started.listenOn,
        acceptors: MANAGEMENT_ACCEPTORS,
        max_conns: node.config['management.listener.http.max_conns'],
        current_conns: started.connections(),
        shutdown_count: []
      }))
      return {
        unload: async () => {
          unreport()
          if (server === started) server = undefined
          await started.stop()
        }
      }
    }
  }
  return {
    plugin,
    routes,
    app: async (node, authenticate, extra, openApi) =>
      (await import('./server.js')).createApiApp(serverComponents(node, init.rules.engine), extra === undefined ? routes : joinRouteTables(routes, extra), authenticate, openApi),
    get server () {
      return server
    }
  }
}
