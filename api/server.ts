import http from 'node:http'
import https from 'node:https'
import { readFileSync } from 'node:fs'
import type { AddressInfo, Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import express, { type NextFunction, type Request, type Response } from 'express'
import passport from 'passport'
import { BasicStrategy } from 'passport-http'
import type { Logger } from '../node/logger.js'
import type { RuleOpsComponents } from '../rules/rule-ops.js'
import { BodyTooLargeError, EmptyCredentialsError, NotFoundError, NotJsonError, WrongCredentialsError, WrongTypeError, toApiError, type ApiError } from '../node/errors.js'
import { checkJsonDepth } from '../node/json-depth.js'
import { ListenError } from '../node/listen-error.js'
import { fullPath, type ApiNode, type ApiResult, type ApiRouteTable, type RouteDef } from './route-table.js'
import { bodyValidator } from './validate.js'
import { openApiDocument } from './openapi.js'

/** Largest request body accepted (spec: not shown); larger ones get 413. */
export const MAX_BODY_BYTES = 1024 * 1024

/** A running management API listener. */
export interface ApiServer {
  /** Bound port (differs from the configured one when that was 0). */
  port: number
  protocol: 'http:management'
  listenOn: string
  /** Open HTTP connections (listeners API). */
  connections: () => number
  stop: () => Promise<void>
}

/** What the API server uses; the handlers get `node` and `rules` (`ApiRequest` in route-table.ts). */
export interface ApiServerComponents {
  /** The handlers' node; its `config` gives the listeners (`management.listener.*`), its `services.apps` the HTTP Basic users. */
  readonly node: ApiNode
  /** The node's rule engine, for the rule and schema handlers. */
  readonly rules: RuleOpsComponents
  readonly logger: Logger
}

/**
 * Builds the Express application of `/api/v3/`: HTTP Basic authentication against the API
 * applications, JSON bodies (109 when not JSON, 413 above {@link MAX_BODY_BYTES}), one
 * Express route per {@link RouteDef}, the index and the OpenAPI document from the same
 * table, the success envelope ({@link envelope}) and the `{code, message}` error envelope.
 */
export function createApiApp (components: ApiServerComponents, table: ApiRouteTable): express.Express {
  const { node, logger } = components
  const apps = node.services.apps
  const app = express()
  app.disable('x-powered-by')
  const auth = new passport.Passport()
  auth.use(new BasicStrategy((appId, secret, done) => done(null, apps.verify(appId, secret) ? { appId } : false)))
  app.use('/api/v3', (req: Request, res: Response, next: NextFunction) => {
    auth.authenticate('basic', { session: false }, (err: unknown, user: unknown) => {
      if (err !== null && err !== undefined) return next(err)
      if (user === false || user === undefined) {
        const header = req.headers.authorization
        const empty = header === undefined || !/^Basic\s+\S+/i.test(header) || Buffer.from(header.replace(/^Basic\s+/i, ''), 'base64').toString().replace(':', '') === ''
        res.set('WWW-Authenticate', 'Basic realm="Starling management API"')
        return answerError(res, empty ? new EmptyCredentialsError() : new WrongCredentialsError())
      }
      res.locals.appId = (user as { appId: string }).appId
      next()
    })(req, res, next)
  })
  app.use('/api/v3', express.raw({ type: () => true, limit: MAX_BODY_BYTES }))

  app.get('/api/v3/', (_req, res) => {
    res.json({ code: 0, data: table.all().map(r => ({ name: r.name, method: r.method, path: fullPath(r), descr: r.descr })) })
  })
  app.get('/api/v3/openapi.json', (_req, res) => { res.json(openApiDocument([...table.all()])) })

  // the endpoints, built again when a plugin added or removed routes
  let router = express.Router()
  let builtFor = -1
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (builtFor !== table.version) {
      router = routerOf(table.all(), components)
      builtFor = table.version
    }
    router(req, res, next)
  })

  app.use((req: Request, res: Response) => {
    answerError(res, NotFoundError.withMessage(`no endpoint ${req.method} ${req.path}; GET /api/v3/ lists them`))
  })
  app.use((err: any, _req: Request, res: Response, _next: NextFunction) => {
    if (err?.type === 'entity.too.large') {
      return answerError(res, new BodyTooLargeError(MAX_BODY_BYTES))
    }
    const e = requestError(err) ?? toApiError(err)
    if (e.status >= 500) logger.warn({ err }, 'management API error')
    answerError(res, e)
  })
  return app
}

/** One Express route per {@link RouteDef}: body parsed and validated, the handler's result in the envelope. */
function routerOf (routes: readonly RouteDef[], components: ApiServerComponents): express.Router {
  const { node, rules } = components
  const router = express.Router()
  for (const route of routes) {
    const validate = bodyValidator(route)
    const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'delete'
    router[method](fullPath(route), async (req: Request, res: Response, next: NextFunction) => {
      try {
        const body = parseBody(req, route)
        validate?.(body)
        const result = await route.handler({
          params: req.params as Record<string, string>,
          query: req.query as Record<string, string | undefined>,
          body,
          node,
          rules,
          appId: res.locals.appId
        })
        res.json(envelope(result))
      } catch (err) {
        next(err)
      }
    })
  }
  return router
}

/**
 * The request's own fault found by Express before a handler ran, as the catalogue's kind: a
 * path parameter that is not valid percent-encoding (`/sessions/%ZZ`: the router's URIError
 * with status 400) is 108; a body that cannot be read (body-parser: a Content-Encoding it
 * does not know, a gzip or deflate body that does not inflate, an aborted or mis-sized body)
 * is 109. Both were answered 500 (code 102) before (found by bench/fuzz/api-door.ts).
 */
function requestError (err: any): ApiError | null {
  const status = Number(err?.status ?? err?.statusCode)
  if (!(status >= 400 && status < 500)) return null
  if (err instanceof URIError) return new WrongTypeError(`a path parameter is not valid percent-encoding (${String(err.message)})`)
  if (typeof err?.type === 'string' || err?.expose === true) return new NotJsonError(`request body cannot be read: ${String(err.message)}`)
  return null
}

/**
 * A request Node's HTTP parser refuses before Express sees it (a request line and headers
 * over its 16 KiB, a malformed request line or header) is answered with the error envelope
 * too, code 102 (431 or 400), where Node answered a bare 431/400 without a body (found by
 * bench/fuzz/api-door.ts); the connection then closes, as Node's own answer closes it.
 */
function answerClientError (err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) { socket.destroy(); return }
  const tooLarge = err.code === 'HPE_HEADER_OVERFLOW'
  const body = JSON.stringify({ code: 102, message: tooLarge ? 'request line and headers larger than 16384 bytes' : `malformed HTTP request (${String(err.code ?? err.message)})` })
  socket.end(`HTTP/1.1 ${tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request'}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
}

/** The one way an error is answered: its catalogue status with `{code, message}`. */
function answerError (res: Response, e: ApiError): void {
  res.status(e.status).json({ code: e.code, message: e.message })
}

/**
 * The success envelope of a handler's result: `{code: 0}`, or `{code: 0, data, meta?}`.
 * Nodes that failed their part of a cluster-wide answer go into `meta.failed` (`meta` is
 * created when the result has none); `data` is exactly the handler's.
 */
export function envelope (result: ApiResult): Record<string, unknown> {
  if (result === undefined) return { code: 0 }
  const { failed, ...rest } = result
  if (failed === undefined || failed.length === 0) return { code: 0, ...rest }
  return { code: 0, ...rest, meta: { ...rest.meta, failed } }
}

/** The request body as JSON (or undefined when empty); 109 when it is not JSON, JsonTooDeepError (102) when it nests too deeply. */
function parseBody (req: Request, route: RouteDef): unknown {
  const raw = req.body
  if (!Buffer.isBuffer(raw) || raw.length === 0) {
    if (route.body !== undefined) throw new NotJsonError('request body is empty; send a JSON body with Content-Type: application/json')
    return undefined
  }
  let body: unknown
  try {
    body = JSON.parse(raw.toString('utf8'))
  } catch (err: any) {
    throw new NotJsonError(`request body is not JSON: ${err.message}`)
  }
  // before anything (validation, handlers, the store, the answer) recurses into it
  return checkJsonDepth(body, 'request body')
}

/** Starts the API on `management.listener.http` (and `management.listener.https` when set). */
export async function startApiServer (components: ApiServerComponents, table: ApiRouteTable): Promise<ApiServer> {
  const { node, logger } = components
  const app = createApiApp(components, table)
  const cfg = node.config as Record<string, any>
  const address = cfg['management.listener.http']
  const https_ = cfg['management.listener.https']
  const servers: http.Server[] = []
  let open = 0
  // `management.listener.http.max_conns` over HTTP and HTTPS together, read per connection so a
  // change through the configs API applies at once; a connection over it is closed unanswered
  const limit = (socket: Socket): void => {
    if (open >= node.config['management.listener.http.max_conns']) {
      socket.destroy()
      return
    }
    open++
    socket.once('close', () => { open-- })
  }
  const listen = async (server: http.Server, host: string, port: number): Promise<number> => {
    server.on('connection', limit)
    server.on('clientError', answerClientError)
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, host, () => { server.off('error', reject); resolve() })
    })
    servers.push(server)
    return (server.address() as AddressInfo).port
  }
  let port = 0
  try {
    port = await listen(http.createServer(app), address.host, address.port)
    if (https_ !== null && https_ !== undefined) {
      const tlsServer = https.createServer({ key: readFileSync(cfg['management.listener.https.keyfile']), cert: readFileSync(cfg['management.listener.https.certfile']) }, app)
      const httpsPort = await listen(tlsServer, https_.host, https_.port)
      logger.info({ port: httpsPort }, 'management API (HTTPS) started')
    }
  } catch (err: any) {
    for (const s of servers) s.close()
    const key = servers.length === 0 ? 'management.listener.http' : 'management.listener.https'
    throw new ListenError(key, servers.length === 0 ? address.text : https_.text, err)
  }
  logger.info({ protocol: 'http:management', host: address.host, port }, 'listener started')
  return {
    port,
    protocol: 'http:management',
    listenOn: `${address.host}:${port}`,
    connections: () => open,
    stop: async () => {
      await Promise.all(servers.map(s => new Promise<void>(resolve => {
        s.close(() => resolve())
        s.closeAllConnections()
      })))
    }
  }
}
