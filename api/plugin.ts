import type { PluginDefinition } from '../node/plugins/types.js'
import type { StarlingNode } from '../node/node.js'
import { VERSION } from '../node/version.js'
import { startApiServer, type ApiServer } from './server.js'
import { API_ROUTES } from './routes/index.js'

const running = new WeakMap<StarlingNode, ApiServer>()

/** Acceptors reported for the management HTTP listener: Node accepts on one event loop. */
const MANAGEMENT_ACCEPTORS = 1

/** The management API listener of a node, while svc_management is loaded. */
export function managementApi (node: StarlingNode): ApiServer | undefined {
  return running.get(node)
}

/**
 * `svc_management` (EMQ X's emqx_management): the `/api/v3/` HTTP API on
 * `management.listener.http`. Loading the plugin starts the listener, unloading stops it;
 * the operations behind the API (node.rpc) and the CLI exist either way.
 */
export const managementApiPlugin: PluginDefinition = {
  name: 'svc_management',
  version: VERSION,
  description: 'Starling Management API and CLI',
  configSchema: {},
  loadedByDefault: true,
  async load ({ node }) {
    const server = await startApiServer(node, API_ROUTES, node.services.apps)
    running.set(node, server)
    const unreport = node.listenerBoard.add(() => ({
      protocol: server.protocol,
      listen_on: server.listenOn,
      acceptors: MANAGEMENT_ACCEPTORS,
      max_conns: node.config['management.listener.http.max_conns'],
      current_conns: server.connections(),
      shutdown_count: []
    }))
    return {
      unload: async () => {
        unreport()
        running.delete(node)
        await server.stop()
      }
    }
  }
}
