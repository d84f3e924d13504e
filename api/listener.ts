/**
 * The management API's listener (`management.listener.http`, and `.https` when set): bound at
 * start, its Express application (api/server.ts) built at the first request.
 */
import { lazyRequestListener, startHttpListeners } from '../node/http-listener.js'
import type { ApiServer, ApiServerComponents } from './server.js'
import type { ApiRouteTable } from './route-table.js'

/** Starts the API on `management.listener.http` (and `management.listener.https` when set), HTTP Basic with the API applications. */
export async function startApiServer (components: ApiServerComponents, table: ApiRouteTable): Promise<ApiServer> {
  const { node, logger } = components
  // Express, the routers and the validators load with the first request (an idle node has none)
  const app = lazyRequestListener(async () => {
    const { createApiApp, appsBasicAuthenticator } = await import('./server.js')
    return createApiApp(components, table, appsBasicAuthenticator(node.services.apps))
  })
  const cfg = node.config
  const tls = cfg['management.listener.https']
  const listeners = await startHttpListeners(app, {
    http: { address: cfg['management.listener.http'], key: 'management.listener.http' },
    https: tls === null
      ? undefined
      : { address: tls, key: 'management.listener.https', keyfile: cfg['management.listener.https.keyfile'], certfile: cfg['management.listener.https.certfile'] },
    // over HTTP and HTTPS together, read per connection so a change through the configs API applies at once
    maxConns: () => node.config['management.listener.http.max_conns']
  })
  if (listeners.httpsPort !== undefined) logger.info({ port: listeners.httpsPort }, 'management API (HTTPS) started')
  const address = cfg['management.listener.http']
  logger.info({ protocol: 'http:management', host: address.host, port: listeners.port }, 'listener started')
  return {
    port: listeners.port,
    protocol: 'http:management',
    listenOn: `${address.host}:${listeners.port}`,
    connections: listeners.connections,
    stop: listeners.stop
  }
}
