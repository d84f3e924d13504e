/**
 * The management API's listener (`management.listener.http`, and `.https` when set): bound at
 * start, its Express application (api/server.ts) built at the first request. `GET /status`
 * (EMQ X 4's health check, for load balancers and the container's HEALTHCHECK) is answered
 * here without it, so health checks do not load what only the API needs.
 */
import { lazyRequestListener, startHttpListeners } from '../node/http-listener.js'
import type { ApiServer, ApiServerComponents } from './server.js'
import type { ApiRouteTable } from './route-table.js'
import { statusText } from './status.js'

/**
 * Starts the API on `management.listener.http` (and `management.listener.https` when set),
 * HTTP Basic with the API applications; undefined when both are `off` (nothing listens).
 */
export async function startApiServer (components: ApiServerComponents, table: ApiRouteTable): Promise<ApiServer | undefined> {
  const { node, logger } = components
  const cfg = node.config
  const plain = cfg['management.listener.http']
  const tls = cfg['management.listener.https']
  if (plain === null && tls === null) {
    logger.info('management API: management.listener.http and .https are off; nothing listens')
    return undefined
  }
  // Express, the routers and the validators load with the first request other than /status
  const api = lazyRequestListener(async () => {
    const { createApiApp, appsBasicAuthenticator } = await import('./server.js')
    return createApiApp(components, table, appsBasicAuthenticator(node.services.apps))
  })
  const listeners = await startHttpListeners((req, res) => {
    if (req.method === 'GET' && req.url === '/status') {
      const body = statusText(node.name)
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) }).end(body)
      return
    }
    api(req, res)
  }, {
    http: plain === null ? undefined : { address: plain, key: 'management.listener.http' },
    https: tls === null
      ? undefined
      : { address: tls, key: 'management.listener.https', keyfile: cfg['management.listener.https.keyfile'], certfile: cfg['management.listener.https.certfile'] },
    // over HTTP and HTTPS together, read per connection so a change through the configs API applies at once
    maxConns: () => node.config['management.listener.http.max_conns']
  })
  if (listeners.httpsPort !== undefined) logger.info({ port: listeners.httpsPort }, 'management API (HTTPS) started')
  // the HTTP listener, or the HTTPS one when HTTP is off
  const address = plain ?? tls!
  const port = listeners.port ?? listeners.httpsPort!
  const protocol = plain === null ? 'https:management' : 'http:management'
  logger.info({ protocol, host: address.host, port }, 'listener started')
  return {
    port,
    protocol,
    listenOn: `${address.host}:${port}`,
    connections: listeners.connections,
    stop: listeners.stop
  }
}
