import express, { type NextFunction, type Request, type Response } from 'express'
import passport from 'passport'
import { BasicStrategy } from 'passport-http'
import type { Logger } from '../node/logger.js'
import type { RuleOpsComponents } from '../rules/rule-ops.js'
import type { AppsService } from '../node/apps/apps.js'
import { BodyTooLargeError, EmptyCredentialsError, NotFoundError, NotJsonError, WrongCredentialsError, WrongTypeError, toApiError, type ApiError } from '../node/errors.js'
import { checkJsonDepth } from '../node/json-depth.js'
import { V4_PREFIX, v3BodyFor, v4Routes } from './v4.js'
import { statusText } from './status.js'
import { fullPath, type ApiNode, type ApiResult, type ApiRouteTable, type RouteDef } from './route-table.js'
import { openApiDocument, type OpenApiAddition } from './openapi.js'

/** Largest request body accepted (spec: not shown); larger ones get 413. */
export const MAX_BODY_BYTES = 1024 * 1024

/** A running management API listener. */
export interface ApiServer {
  /** Bound port (differs from the configured one when that was 0): HTTP's, or HTTPS's when HTTP is off. */
  port: number
  protocol: 'http:management' | 'https:management'
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
 * The authentication step of `/api/v3/`: resolves with the name of the caller (the API
 * application on 8080, the dashboard user on 18083), which handlers get as `appId`, or
 * throws the {@link ApiError} to answer (it may set headers such as `WWW-Authenticate` on
 * `res` first). Every `/api/v3/` request passes it before anything else runs.
 */
export type ApiAuthenticator = (req: Request, res: Response) => Promise<string> | string

/** The routes an API application serves: a route table, or a view joining several ({@link joinRouteTables}). */
export type RouteTableView = Pick<ApiRouteTable, 'all' | 'version'>

/**
 * The management listener's authentication: HTTP Basic with an enabled, unexpired API
 * application (`node.services.apps`); 104 when no credentials are given, 103 when they are
 * wrong, both with `WWW-Authenticate: Basic`.
 */
export function appsBasicAuthenticator (apps: Pick<AppsService, 'verify'>): ApiAuthenticator {
  const auth = new passport.Passport()
  auth.use(new BasicStrategy((appId, secret, done) => done(null, apps.verify(appId, secret) ? { appId } : false)))
  return async (req, res) => await new Promise<string>((resolve, reject) => {
    auth.authenticate('basic', { session: false }, (err: unknown, user: unknown) => {
      if (err !== null && err !== undefined) return reject(err)
      if (user === false || user === undefined) {
        const header = req.headers.authorization
        const empty = header === undefined || !/^Basic\s+\S+/i.test(header) || Buffer.from(header.replace(/^Basic\s+/i, ''), 'base64').toString().replace(':', '') === ''
        res.set('WWW-Authenticate', 'Basic realm="Starling management API"')
        return reject(empty ? new EmptyCredentialsError() : new WrongCredentialsError())
      }
      resolve((user as { appId: string }).appId)
    })(req, res, (err?: unknown) => { reject(err ?? new WrongCredentialsError()) })
  })
}

/**
 * Builds the Express application of `/api/v3/`: `authenticate` first (the management
 * listener gives {@link appsBasicAuthenticator}), JSON bodies (109 when not JSON, 413 above
 * {@link MAX_BODY_BYTES}), one Express route per {@link RouteDef}, the index and the OpenAPI
 * document from the same table, the success envelope ({@link envelope}) and the `{code,
 * message}` error envelope.
 */
export function createApiApp (components: ApiServerComponents, table: RouteTableView, authenticate: ApiAuthenticator, openApi?: OpenApiAddition): express.Express {
  const { logger } = components
  const app = express()
  app.disable('x-powered-by')
  // EMQ X 4's health check for load balancers and containers: no credentials, plain text
  app.get('/status', (_req, res) => {
    res.type('text/plain').send(statusText(components.node.name))
  })
  for (const prefix of ['/api/v3', V4_PREFIX]) {
    app.use(prefix, (req: Request, res: Response, next: NextFunction) => {
      Promise.resolve().then(async () => await authenticate(req, res)).then((caller) => {
        res.locals.appId = caller
        next()
      }, next)
    })
    app.use(prefix, express.raw({ type: () => true, limit: MAX_BODY_BYTES }))
  }

  app.get('/api/v3/', (_req, res) => {
    res.json({ code: 0, data: table.all().map(r => ({ name: r.name, method: r.method, path: fullPath(r), descr: r.descr })) })
  })
  app.get(`${V4_PREFIX}/`, (_req, res) => {
    res.json({ code: 0, data: v4Routes(table.all()).map(r => ({ name: r.name, method: r.method, path: V4_PREFIX + r.path, descr: r.descr })) })
  })
  app.get('/api/v3/openapi.json', (_req, res) => { res.json(openApiDocument([...table.all()], openApi)) })

  // the endpoints, built at the first request and again when a plugin added or removed routes
  // (not at start: the body validators' Ajv is not part of an idle node, issue 22)
  let built: { version: number, router: Promise<express.Router> } | undefined
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (built === undefined || built.version !== table.version) built = { version: table.version, router: routerOf(table.all(), components) }
    built.router.then((router) => { router(req, res, next) }, next)
  })

  app.use((req: Request, res: Response) => {
    const index = req.path.startsWith(`${V4_PREFIX}/`) ? `${V4_PREFIX}/` : '/api/v3/'
    answerError(res, NotFoundError.withMessage(`no endpoint ${req.method} ${req.path}; GET ${index} lists them`))
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

/**
 * One Express route per {@link RouteDef}: body parsed and validated, the handler's result in
 * the envelope. The body validators (validate.ts, with Ajv) are imported here, with the first
 * request.
 */
async function routerOf (routes: readonly RouteDef[], components: ApiServerComponents): Promise<express.Router> {
  const { node, rules } = components
  const { bodyValidator } = await import('./validate.js')
  const router = express.Router()
  // v3's routes, then v4's: the same handlers, v4's names renamed on the way in and out (api/v4.ts)
  const versions = [
    { prefix: '/api/v3', routes, adaptOf: (_route: RouteDef) => (body: unknown) => body },
    { prefix: V4_PREFIX, routes: v4Routes(routes), adaptOf: v3BodyFor }
  ]
  for (const { prefix, routes, adaptOf } of versions) {
    for (const route of routes) {
      const validate = bodyValidator(route)
      const adapt = adaptOf(route)
      const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'delete'
      router[method](prefix + route.path, async (req: Request, res: Response, next: NextFunction) => {
        try {
          const body = adapt(parseBody(req, route))
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
