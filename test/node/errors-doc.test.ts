import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  ApiError, CODES, ERRORS, HTTP_STATUS, errorCode, errorKinds, kindFor, renderErrorsDoc, toApiError,
  AclDeniedError, AdminNotDeletableError, BadQosError, BadRpcError, BadTopicError, BodyTooLargeError, ClientOfflineError, JsonTooDeepError,
  EmptyCredentialsError, InternalError, MissingParameterError, NotFoundError, NotJsonError, OldPasswordWrongError,
  RefusedError, SqlNotMatchError, UserExistsError, UserNotFoundError, WrongCredentialsError, WrongTypeError,
  type ErrorKind
} from '../../node/errors.js'
import {
  AuthPluginNotLoadedError, CredentialEmptyError, CredentialExistsError, CredentialInvalidError, CredentialNotFoundError
} from '../../plugins/auth/errors.js'
import {
  DashboardAdminNotDeletableError, DashboardCrossSiteError, DashboardEmptyCredentialsError, DashboardSignInRequiredError, DashboardSlowDownError,
  DashboardUserExistsError, DashboardUserNotFoundError, DashboardWrongCredentialsError
} from '../../plugins/dashboard/errors.js'
import { BannedEntryNotFoundError, BannedParameterInvalidError, BannedParameterMissingError } from '../../node/banned/banned-entry.js'
import {
  LoadedPluginsFileError, PluginAlreadyStartedError, PluginLoadError, PluginNotFoundError, PluginNotStartedError
} from '../../node/plugins/errors.js'
import { TraceError } from '../../node/trace/trace-service.js'
import { AclFileError } from '../../node/acl/acl-error.js'
import { ControlError, NodeNotRunningError } from '../../node/control/errors.js'
import { EVERY_API_ROUTE as API_ROUTES } from '../helpers/api-routes.js'

const root = fileURLToPath(new URL('../../', import.meta.url))
const HOW = 'regenerate with UPDATE_ERRORS_DOC=1 NODE_OPTIONS=--experimental-vm-modules npx jest test/node/errors-doc'

/** One instance of every catalogue kind, made as the code that throws it makes it. */
const SAMPLES: Record<string, () => Error> = {
  BadRpcError: () => new BadRpcError('node b@h is not connected'),
  RefusedError: () => new RefusedError('invalid SQL'),
  NotFoundError: () => new NotFoundError('rule r1'),
  AclDeniedError: () => new AclDeniedError('c1', 't/#'),
  BodyTooLargeError: () => new BodyTooLargeError(1048576),
  JsonTooDeepError: () => new JsonTooDeepError('request body', 100),
  InternalError: () => new InternalError('disk full'),
  WrongCredentialsError: () => new WrongCredentialsError(),
  EmptyCredentialsError: () => new EmptyCredentialsError(),
  UserNotFoundError: () => new UserNotFoundError('app x does not exist'),
  AdminNotDeletableError: () => new AdminNotDeletableError('the default application admin cannot be deleted'),
  MissingParameterError: () => new MissingParameterError('topic is missing'),
  WrongTypeError: () => new WrongTypeError('qos must be an integer'),
  NotJsonError: () => new NotJsonError('request body is not JSON'),
  ClientOfflineError: () => new ClientOfflineError('client c1 is not connected'),
  UserExistsError: () => new UserExistsError('app x already exists'),
  OldPasswordWrongError: () => new OldPasswordWrongError('old password wrong'),
  BadTopicError: () => new BadTopicError('bad topic'),
  BadQosError: () => new BadQosError('qos must be 0, 1 or 2'),
  SqlNotMatchError: () => new SqlNotMatchError(),
  CredentialExistsError: () => new CredentialExistsError('client id', 'c1', 'clientid'),
  CredentialNotFoundError: () => new CredentialNotFoundError('username', 'u', 'user'),
  CredentialEmptyError: () => new CredentialEmptyError('password'),
  CredentialInvalidError: () => new CredentialInvalidError('password is too long'),
  AuthPluginNotLoadedError: () => new AuthPluginNotLoadedError('emqx_auth_username'),
  DashboardWrongCredentialsError: () => new DashboardWrongCredentialsError(),
  DashboardSlowDownError: () => new DashboardSlowDownError(9),
  DashboardEmptyCredentialsError: () => new DashboardEmptyCredentialsError('password'),
  DashboardSignInRequiredError: () => new DashboardSignInRequiredError('no session'),
  DashboardUserNotFoundError: () => new DashboardUserNotFoundError('bob'),
  DashboardAdminNotDeletableError: () => new DashboardAdminNotDeletableError('admin'),
  DashboardUserExistsError: () => new DashboardUserExistsError('bob'),
  DashboardCrossSiteError: () => new DashboardCrossSiteError('Origin https://evil.example is not this listener'),
  BannedParameterMissingError: () => new BannedParameterMissingError('who'),
  BannedParameterInvalidError: () => new BannedParameterInvalidError('"until" must be an integer'),
  BannedEntryNotFoundError: () => new BannedEntryNotFoundError('c1', 'client_id'),
  PluginNotFoundError: () => new PluginNotFoundError('nope', ['a']),
  PluginAlreadyStartedError: () => new PluginAlreadyStartedError('a'),
  PluginNotStartedError: () => new PluginNotStartedError('a'),
  PluginLoadError: () => new PluginLoadError('a', new Error('bad file')),
  LoadedPluginsFileError: () => new LoadedPluginsFileError('cannot write data/loaded_plugins'),
  TraceError: () => new TraceError('no trace of client_id c1 is running'),
  AclFileError: () => new AclFileError('etc/acl.conf', 3, 'expected allow or deny'),
  ControlError: () => new ControlError('Node n did not answer'),
  NodeNotRunningError: () => new NodeNotRunningError('n@h', '/tmp/x.sock')
}

/** Error classes that are not kinds of the catalogue: bases of kinds, or errors that never reach a user as such. */
const NOT_KINDS: Record<string, string> = {
  ApiError: 'base of every API kind',
  AuthError: 'base of the credential kinds',
  DashboardError: 'base of the dashboard kinds',
  BannedError: 'base of the banned-list kinds',
  PluginError: 'base of the plugin-manager kinds',
  ConfigError: 'start-up only; the API answers a wrong config value as WrongTypeError (108)',
  ListenError: 'start-up only: a listener that cannot bind stops the node',
  ControlSocketInUseError: 'start-up only: stops the node',
  ControlSocketPathTooLongError: 'start-up only: stops the node',
  RequestFormatError: 'control protocol: answered "Bad request: ..." to a client that is not starling-ctl',
  SqlError: 'rule engine: the API answers it as RefusedError (invalid SQL)',
  SqlEvalError: 'rule engine: counted as a rule failure, never answered',
  SchemaCompileError: 'schema registry: the API answers it as RefusedError',
  KeystreamExhaustedError: 'cluster private network: closes that one connection (after 256 GiB one way); a member dials again, nothing answers it',
  ConversionError: 'rule functions: a rule failure, never answered',
  FunctionUnavailableError: 'rule functions: a rule failure, never answered',
  DeferredResult: 'rule functions: not an error, a value thrown to defer',
  AclRowError: 'auth backends: a malformed ACL row; the ACL source answers ignore and logs it, never answered',
  BackendTimeoutError: 'auth backends: a query past its timeout; the plugin answers ignore and raises its alarm, never answered',
  HttpServiceError: 'svc_auth_http: the service answered an error status; the plugin answers ignore and raises its alarm, never answered',
  LdapPoolError: 'LDAP pool (auth backends): the directory cannot be used; the plugin answers ignore and raises its alarm, never answered',
  RedisUnavailableError: 'Redis pool (auth backends): not connected; the plugin answers ignore and raises its alarm, never answered',
  LineError: 'svc_backend_influxdb: a point line protocol cannot write (a line break in a tag, ...); the point counts as failed, logged, never answered',
  RejectedBatch: 'buffered sinks (plugins/kit/sink/): a batch the far side refused for good; counted as failed for its actions and logged, never answered',
  SqlQueryTimeoutError: 'SQL pools (auth backends): a query past query_timeout; the plugin answers ignore and raises its alarm, never answered',
  WriteRefused: 'data integration (plugins/kit/data/): a write the database refused for good; its rows count as failed in the action metrics, never answered',
  WriteSkipped: 'data integration (plugins/kit/data/): a pipelined write rolled back because the write before it was not stored; the kit sends it again, never answered',
  NotCommitted: 'SQL pools (plugins/kit/pools/): a pipelined transaction rolled back because the one before it was not stored; the SQL data client turns it into WriteSkipped, never answered'
}

/** The row of `name` in docs/errors.md, split into cells. */
function docRow (doc: string, name: string): string[] | undefined {
  const line = doc.split('\n').find(l => l.startsWith(`| \`${name}\` |`))
  return line?.split(/(?<!\\)\|/).slice(1, -1).map(c => c.trim())
}

/** Every .ts file under the given source directories. */
function sourceFiles (dirs: string[]): string[] {
  const out: string[] = []
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name)
      if (e.isDirectory()) walk(p)
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p)
    }
  }
  for (const d of dirs) walk(join(root, d))
  return out
}

describe('error catalogue (node/errors.ts) and docs/errors.md', () => {
  it('keeps docs/errors.md in step with the catalogue', () => {
    const path = root + 'docs/errors.md'
    const rendered = renderErrorsDoc()
    if (process.env.UPDATE_ERRORS_DOC === '1') writeFileSync(path, rendered)
    const committed = readFileSync(path, 'utf8')
    if (committed !== rendered) throw new Error(`docs/errors.md is out of date with node/errors.ts; ${HOW}`)
  })

  it('is what docs/api.md points to for the codes, with the statuses it summarises', () => {
    const api = readFileSync(root + 'docs/api.md', 'utf8')
    expect(api).toContain('[errors.md](errors.md)')
    expect(api).toContain(`101 (another node did not answer) is ${HTTP_STATUS[101]}`)
    expect(HTTP_STATUS[103]).toBe(401)
    expect(HTTP_STATUS[104]).toBe(401)
    expect(api).toContain(`112 (client not online) are ${HTTP_STATUS[112]}`)
    expect(HTTP_STATUS[105]).toBe(404)
    for (const code of [106, 107, 108, 109, 110, 111, 113, 114, 115, 116]) expect(HTTP_STATUS[code]).toBe(400)
  })

  it('has one sample per kind, and every kind\'s entry is filed under its own name', () => {
    expect(Object.keys(SAMPLES).sort()).toEqual(Object.keys(ERRORS).sort())
    for (const [name, k] of Object.entries(ERRORS)) expect(k.name).toBe(name)
  })

  it.each(errorKinds().map(k => [k.name, k] as [string, ErrorKind]))('%s has the name, code and status docs/errors.md gives it', (name, k) => {
    const doc = readFileSync(root + 'docs/errors.md', 'utf8')
    const row = docRow(doc, name)
    expect(row).toBeDefined()
    expect(row?.[1]).toBe(String(k.code ?? '-'))
    expect(row?.[2]).toBe(String(k.status ?? '-'))

    const err = SAMPLES[name]()
    expect(err.name).toBe(name)
    expect(err.message).not.toBe('')
    if (k.status === null) {
      // starling-ctl only: not an API error, and the control socket answers it without a code
      // (a ControlError passes on the code of the node's error it carries)
      expect(err).not.toBeInstanceOf(ApiError)
      expect(errorCode(err)).toBeUndefined()
      return
    }
    expect(err).toBeInstanceOf(ApiError)
    const answered = toApiError(err)
    expect(answered).toBe(err)
    expect({ code: answered.code, status: answered.status, kind: answered.kind.name }).toEqual({ code: k.code, status: k.status, kind: name })
    expect(errorCode(err)).toBe(k.code)
  })

  it('answers anything outside the catalogue as an internal error (500, 102), not by its fields', () => {
    const e = toApiError(Object.assign(new Error('client not online'), { code: 112, status: 404 }))
    expect({ name: e.name, code: e.code, status: e.status, message: e.message }).toEqual({ name: 'InternalError', code: 102, status: 500, message: 'client not online' })
  })

  it('gives a bare code and status (an answer relayed from another node) the first kind with them', () => {
    expect(new ApiError(CODES.UNKNOWN, 'x', 404).kind.name).toBe('NotFoundError')
    expect(new ApiError(CODES.USER_EXISTS, 'x').kind.name).toBe('UserExistsError')
    expect(new ApiError(CODES.PLUGIN_STARTED, 'already_started').kind.name).toBe('PluginAlreadyStartedError')
    expect(kindFor(999, 400).name).toBe('InternalError')
    for (const code of Object.values(CODES)) {
      expect(HTTP_STATUS[code]).toBe(errorKinds().find(k => k.code === code)?.status)
    }
  })

  it('lists every error class of the node, the API, the cluster and the rule engine, or says why not', () => {
    const found = new Map<string, string>()
    for (const file of sourceFiles(['node', 'plugins', 'api', 'cluster', 'rules', 'bin'])) {
      const text = readFileSync(file, 'utf8')
      for (const m of text.matchAll(/\bclass (\w+) extends (\w+)/g)) found.set(m[1], m[2])
    }
    // a class is an error class when its chain of bases ends in Error
    const isError = (name: string, seen = 0): boolean =>
      name === 'Error' || (seen < 10 && found.has(name) && isError(found.get(name) as string, seen + 1))
    const errorClasses = [...found.keys()].filter(c => isError(c))
    const unlisted = errorClasses.filter(c => !Object.hasOwn(ERRORS, c) && !Object.hasOwn(NOT_KINDS, c))
    expect(unlisted).toEqual([])
    // a class that extends ApiError (directly or not) answers the API, so it must be a kind
    const isApi = (name: string, seen = 0): boolean =>
      name === 'ApiError' || (seen < 10 && found.has(name) && isApi(found.get(name) as string, seen + 1))
    const apiNotKinds = errorClasses.filter(c => c !== 'ApiError' && isApi(c) && !Object.hasOwn(ERRORS, c) && !['AuthError', 'BannedError', 'PluginError', 'DashboardError'].includes(c))
    expect(apiNotKinds).toEqual([])
    // NOT_KINDS names only classes that exist
    expect(Object.keys(NOT_KINDS).filter(c => !errorClasses.includes(c))).toEqual([])
  })

  it('throws the catalogue\'s classes: a bare ApiError only carries a code and status known at run time, and says so', () => {
    const bare: string[] = []
    const unexplained: string[] = []
    for (const file of sourceFiles(['node', 'plugins', 'api', 'cluster', 'rules'])) {
      const lines = readFileSync(file, 'utf8').split('\n')
      const text = lines.join('\n')
      // a code written in the source names a kind: use its class (RefusedError, NotFoundError.withMessage ...)
      for (const m of text.matchAll(/new ApiError\(\s*(CODES\.\w+|\d+)\b[^\n]*/g)) {
        bare.push(`${file.slice(root.length)}:${text.slice(0, m.index).split('\n').length}: ${m[0].slice(0, 80)}`)
      }
      // a code relayed or looked up at run time: the line above says why
      lines.forEach((line, i) => {
        if (!line.includes('new ApiError(') || /^\s*(\*|\/\/)/.test(line)) return
        if (!/^\s*\/\//.test(lines[i - 1] ?? '')) unexplained.push(`${file.slice(root.length)}:${i + 1}: ${line.trim().slice(0, 80)}`)
      })
    }
    expect(bare).toEqual([])
    expect(unexplained).toEqual([])
  })

  it('has a kind for every code a route\'s body validation answers with (api/validate.ts makes it at run time)', () => {
    const misses: string[] = []
    for (const route of API_ROUTES) {
      for (const [field, code] of Object.entries(route.fieldCodes ?? {})) {
        const k = kindFor(code, HTTP_STATUS[code])
        if (k.code !== code) misses.push(`${route.method} ${route.path} ${field}: ${code}`)
      }
    }
    expect(misses).toEqual([])
  })

  it('makes a kind with a message its form does not fit, keeping the text as given', () => {
    const e = NotFoundError.withMessage('no persistent session of client c1')
    expect(e).toBeInstanceOf(NotFoundError)
    expect({ name: e.name, code: e.code, status: e.status, message: e.message, kind: e.kind.name })
      .toEqual({ name: 'NotFoundError', code: 102, status: 404, message: 'no persistent session of client c1', kind: 'NotFoundError' })
    expect(new NotFoundError('rule r1').message).toBe('rule r1 not found')
    expect(new NotFoundError('action a', 'known actions: b, c').message).toBe('action a not found; known actions: b, c')
    expect(SqlNotMatchError.withMessage('x').message).toBe('x')
    expect(new RefusedError('invalid SQL').message).toBe(RefusedError.withMessage('invalid SQL').message)
  })
})
