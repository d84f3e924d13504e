/**
 * The node's error catalogue: every error a user can get from the management API or from
 * `starling-ctl` is a kind listed in {@link ERRORS}, with a stable name, the spec's code
 * (section Errors: 101-115, plus 116 for a wrong `qos`), the HTTP status Starling answers it
 * with (the spec leaves the status open) and its message. `docs/errors.md` is rendered from
 * this list ({@link renderErrorsDoc}; `test/node/errors-doc.test.ts` fails on drift and
 * rewrites it with `UPDATE_ERRORS_DOC=1`), so the code, the status and the doc never disagree.
 *
 * The stable name of a kind is the name of its class (`err.name`). Every API error is an
 * {@link ApiError}: the generic kinds below are made with {@link createError} (fastify's
 * pattern: one call defines an error class), the subsystems' own classes (credential tables,
 * banned list, plugin manager) extend ApiError and take their code and status from their entry
 * here. The API's error middleware and the control socket turn them into `{code, message}`
 * ({@link toApiError}, {@link errorCode}); anything else that reaches them is an internal
 * error (HTTP 500, code 102). Errors of the rule engine's SQL, of the configuration at
 * start-up and of the MQTT wire are not API errors: the API converts them into kinds listed
 * here, or they never reach it.
 */

/** Spec error codes. */
export const CODES = {
  BADRPC: 101,
  UNKNOWN: 102,
  WRONG_CREDENTIALS: 103,
  EMPTY_CREDENTIALS: 104,
  USER_NOT_FOUND: 105,
  ADMIN_NOT_DELETABLE: 106,
  MISSING_PARAMETER: 107,
  WRONG_TYPE: 108,
  NOT_JSON: 109,
  PLUGIN_STARTED: 110,
  PLUGIN_STOPPED: 111,
  CLIENT_OFFLINE: 112,
  USER_EXISTS: 113,
  OLD_PASSWORD_WRONG: 114,
  BAD_TOPIC: 115,
  BAD_QOS: 116
} as const

/** One kind of error a user can get: a row of `docs/errors.md`. */
export interface ErrorKind {
  /** Stable name: the class's name, which is also the error's `name`. */
  readonly name: string
  /** The spec's code in the `{code, message}` answer; null for errors only starling-ctl prints, which carry none. */
  readonly code: number | null
  /** HTTP status of the API's answer; null for errors that never reach the API. */
  readonly status: number | null
  /** The message; `<...>` marks what varies. */
  readonly message: string
  /** Where it arises: endpoints, commands, cases. */
  readonly where: string
}

function kind (name: string, code: number | null, status: number | null, message: string, where: string): ErrorKind {
  return { name, code, status, message, where }
}

/**
 * The catalogue, in the order of `docs/errors.md`. The generic kinds come first, one per
 * spec code (and per status where code 102 has several): an `ApiError` made from a bare code
 * and status (an answer relayed from another node: `new ApiError(code, message, status)`)
 * is of the first kind with that code and status. Code that knows the kind it throws uses
 * the kind's class (`new RefusedError(message)`, `NotFoundError.withMessage(message)`), not a
 * bare code; `test/node/errors-doc.test.ts` checks that.
 */
export const ERRORS = {
  // the spec's codes (generic kinds)
  BadRpcError: kind('BadRpcError', 101, 502, 'node <node> is not connected / is stopped (see cluster status) / did not answer <call> within <ms> ms / node <node>: <its failure>', 'any request or command that reaches another node (`/nodes/<node>/...`, cluster-wide lists, cluster join)'),
  RefusedError: kind('RefusedError', 102, 400, '<what was refused and how to correct it>', 'input the spec has no code for: rule SQL, actions, resources, schemas, log levels, cleaning the session of a connected client, joining a node to itself'),
  NotFoundError: kind('NotFoundError', 102, 404, '<what> not found; <where to see the known ones>', 'an unknown node, rule, resource, action, schema, session, path or endpoint'),
  AclDeniedError: kind('AclDeniedError', 102, 403, 'the ACL denies client <client id> a subscription to <filter>', '`POST /mqtt/subscribe` (and batch) on behalf of a client'),
  BodyTooLargeError: kind('BodyTooLargeError', 102, 413, 'request body larger than 1048576 bytes', 'any API request with a body over 1 MB'),
  JsonTooDeepError: kind('JsonTooDeepError', 102, 400, '<request body|what> nests objects and arrays more than 100 levels deep; the limit is 100', 'any API request whose JSON body nests deeper than 100 levels; the output of the SQL tester (`POST /rules?test=true`); the JSON arguments of `rules create`/`update`, `resources create`, `schemas create`'),
  InternalError: kind('InternalError', 102, 500, '<the failure>', 'a failure of the node itself (not of the request); the node logs it with its stack'),
  WrongCredentialsError: kind('WrongCredentialsError', 103, 401, 'wrong application id or secret: the default application\'s secret is management.default_application.secret, or, when that is empty, the one the node printed on standard error at its first start; another application\'s was shown when it was added (starling-ctl mgmt insert, POST /api/v3/apps/)', 'any API request whose HTTP Basic credentials are not an enabled, unexpired application'),
  EmptyCredentialsError: kind('EmptyCredentialsError', 104, 401, 'application id and secret are empty: send HTTP Basic credentials <app_id>:<secret>; the default application\'s secret is management.default_application.secret, or, when that is empty, the one the node printed on standard error at its first start; another application\'s was shown when it was added (starling-ctl mgmt insert, POST /api/v3/apps/)', 'any API request without credentials'),
  UserNotFoundError: kind('UserNotFoundError', 105, 404, 'application <id> does not exist; GET /api/v3/apps/ (or starling-ctl mgmt list) lists them', '`/apps/<id>`, `mgmt lookup`/`update`/`delete`; a credential table\'s unknown id'),
  AdminNotDeletableError: kind('AdminNotDeletableError', 106, 400, 'the default application <id> cannot be deleted', '`DELETE /apps/<id>`, `mgmt delete` of the default application'),
  MissingParameterError: kind('MissingParameterError', 107, 400, 'missing parameter <field>', 'a request body (checked against its endpoint\'s schema) or command without a required field or argument'),
  WrongTypeError: kind('WrongTypeError', 108, 400, 'parameter <field> must be <type> / <field> must be <what>, not <value>', 'a field of the wrong type or an unusable value (also configuration values set through the API)'),
  NotJsonError: kind('NotJsonError', 109, 400, 'request body is not JSON: <parse error> / request body is empty', 'any API request that needs a JSON body'),
  ClientOfflineError: kind('ClientOfflineError', 112, 404, 'client <client id> is not online', '`/connections/<id>`, kick, `/mqtt/subscribe` and `/mqtt/unsubscribe` on behalf of a client'),
  UserExistsError: kind('UserExistsError', 113, 400, 'application <id> already exists', '`POST /apps`, `mgmt insert`; a credential table\'s existing id'),
  OldPasswordWrongError: kind('OldPasswordWrongError', 114, 400, 'old password wrong', 'the dashboard\'s `PUT /change_pwd/<username>` with a wrong `old_pwd` (svc_dashboard, 18083)'),
  BadTopicError: kind('BadTopicError', 115, 400, 'bad topic "<topic>": <why> / bad topic filter "<filter>": <why> / parameter topic <rule>', '`/mqtt/publish`, `/mqtt/subscribe`, `/mqtt/unsubscribe`'),
  BadQosError: kind('BadQosError', 116, 400, 'parameter qos must be equal to one of the allowed values', '`/mqtt/publish`, `/mqtt/subscribe` (Starling\'s addition to the spec)'),
  SqlNotMatchError: kind('SqlNotMatchError', 404, 404, 'SQL Not Match', '`POST /rule_test` when the test context does not match the SQL (EMQ X\'s answer, code 404 included)'),
  // credential tables (plugins/auth/errors.ts)
  CredentialExistsError: kind('CredentialExistsError', 113, 400, '<client id|username> "<id>" already exists; change its password with `<command> update` instead', '`POST /auth_clientid`, `/auth_username`; `clientid add`, `user add`'),
  CredentialNotFoundError: kind('CredentialNotFoundError', 105, 404, '<client id|username> "<id>" does not exist; `<command> list` shows the known ones', '`/auth_clientid/<id>`, `/auth_username/<name>`; `clientid`/`user` update and delete'),
  CredentialEmptyError: kind('CredentialEmptyError', 104, 401, '<what> is empty; give a non-empty value', 'adding or updating a credential with an empty id or password'),
  CredentialInvalidError: kind('CredentialInvalidError', 108, 400, '<what cannot be stored>', 'a credential id or password that is too long or not text'),
  AuthPluginNotLoadedError: kind('AuthPluginNotLoadedError', 102, 400, 'plugin <plugin> is not loaded; load it first with `starling-ctl plugins load <plugin>`', 'credential endpoints and commands while their auth plugin is not loaded'),
  // dashboard users and sessions (plugins/dashboard/errors.ts), on the dashboard listener (18083)
  DashboardWrongCredentialsError: kind('DashboardWrongCredentialsError', 103, 401, 'wrong username or password', '`POST /auth` with an unknown user or a wrong password (the same answer for both), HTTP Basic with a dashboard user on the dashboard listener'),
  DashboardSlowDownError: kind('DashboardSlowDownError', 103, 429, 'too many wrong passwords for this user or from this address; try again in <seconds> s', '`POST /auth` and HTTP Basic on the dashboard listener while earlier wrong passwords hold the next attempt back longer than 8 s'),
  DashboardEmptyCredentialsError: kind('DashboardEmptyCredentialsError', 104, 400, '<username|password|new_pwd> is empty', '`POST /auth`, `POST /users`, `PUT /change_pwd/<username>`, `admins add`/`passwd` with an empty name or password'),
  DashboardSignInRequiredError: kind('DashboardSignInRequiredError', 104, 401, 'sign in first: <why>', 'any `/api/v3/` request on the dashboard listener without a live session token (cookie or `Authorization: Bearer`) or dashboard user HTTP Basic credentials'),
  DashboardUserNotFoundError: kind('DashboardUserNotFoundError', 105, 404, 'dashboard user <name> does not exist; GET /api/v3/users lists them', '`PUT`/`DELETE /users/<name>`, `PUT /change_pwd/<username>`, `admins passwd`/`del`'),
  DashboardAdminNotDeletableError: kind('DashboardAdminNotDeletableError', 106, 400, 'the default dashboard user <name> cannot be deleted', '`DELETE /users/<name>`, `admins del` of `dashboard.default_user.login`'),
  DashboardUserExistsError: kind('DashboardUserExistsError', 113, 400, 'dashboard user <name> already exists', '`POST /users`, `admins add`'),
  DashboardCrossSiteError: kind('DashboardCrossSiteError', 102, 403, 'cross-site request refused: <why>', 'a write on the dashboard listener whose `Origin` is not the listener\'s own, or a cookie-authenticated write without `X-Requested-With`'),
  // banned list (node/banned/banned-entry.ts)
  BannedParameterMissingError: kind('BannedParameterMissingError', 107, 400, 'banned entry needs "<field>"', '`POST /banned`, `DELETE /banned/<who>`, `banned add`/`delete` without `who` or `as`'),
  BannedParameterInvalidError: kind('BannedParameterInvalidError', 108, 400, '"<field>" must be <what>, not <value>', 'a banned entry with a wrong `as`, `who`, `until` or text field'),
  BannedEntryNotFoundError: kind('BannedEntryNotFoundError', 102, 404, 'no banned entry for <as> "<who>"; `starling-ctl banned list` shows the entries', '`DELETE /banned/<who>`, `banned delete`'),
  // plugin manager (node/plugins/errors.ts)
  PluginNotFoundError: kind('PluginNotFoundError', 102, 404, 'unknown plugin "<plugin>"; known plugins: <names>', '`/nodes/<node>/plugins/<plugin>/...`, `/plugin_configs/<plugin>`, `plugins load`/`unload`/`reload`'),
  PluginAlreadyStartedError: kind('PluginAlreadyStartedError', 110, 400, 'already_started', '`PUT .../plugins/<plugin>/load`, `plugins load` of a loaded plugin'),
  PluginNotStartedError: kind('PluginNotStartedError', 111, 400, 'not_started', '`PUT .../plugins/<plugin>/unload`, `plugins unload` of a plugin that is not loaded'),
  PluginLoadError: kind('PluginLoadError', 102, 400, 'cannot load plugin <plugin>: <reason>', 'loading or reloading a plugin whose config file is wrong or whose start fails'),
  LoadedPluginsFileError: kind('LoadedPluginsFileError', 102, 400, '<data/loaded_plugins cannot be read or written: why>', 'loading or unloading a plugin when `data/loaded_plugins` cannot be written'),
  // starling-ctl only: answered without a code, never by the API
  TraceError: kind('TraceError', null, null, 'trace <type> <target> is already running / no trace of <type> <target> is running / unknown level <level>', '`trace start`, `trace stop`'),
  AclFileError: kind('AclFileError', null, null, '<file>:<line>: <what was expected>', '`acl reload` of an ACL file that cannot be read or parsed (the rules in force stay); at start-up it stops the node'),
  ControlError: kind('ControlError', null, null, '<the node\'s error, with its code when it has one>', 'starling-ctl: a command that failed on the node (its code passed on), or a control connection that failed'),
  NodeNotRunningError: kind('NodeNotRunningError', null, null, 'Node <node> is not running (no control socket at <path>); start it with bin/starling', 'any starling-ctl command while the node is down')
} as const satisfies Record<string, ErrorKind>

/** A stable error name. */
export type ErrorName = keyof typeof ERRORS

/** Every kind, in catalogue order. */
export function errorKinds (): ErrorKind[] {
  return Object.values(ERRORS)
}

/** The first kind (generic ones first) with this code and status; InternalError when none. */
export function kindFor (code: number, status: number): ErrorKind {
  return errorKinds().find(k => k.code === code && k.status === status) ?? ERRORS.InternalError
}

/** HTTP status per spec code: the status of the first kind with that code (docs/errors.md). */
export const HTTP_STATUS: Readonly<Record<number, number>> = Object.fromEntries(
  Object.values(CODES).map(code => [code, (errorKinds().find(k => k.code === code)?.status) ?? 400])
)

/**
 * An error answered as `{code, message}` with `status`. Subclasses are the catalogue's kinds;
 * `new ApiError(code, message, status?)` (status defaulting to the code's, see HTTP_STATUS) is
 * of the generic kind with that code and status ({@link kindFor}): it is for a code and status
 * known only at run time, such as another node's answer relayed.
 */
export class ApiError extends Error {
  /** The spec's code. */
  readonly code: number
  /** The HTTP status. */
  readonly status: number

  constructor (code: number, message: string, status?: number, options?: ErrorOptions)
  constructor (kind: ErrorKind, message: string, options?: ErrorOptions)
  constructor (codeOrKind: number | ErrorKind, message: string, statusOrOptions?: number | ErrorOptions, options?: ErrorOptions) {
    const k = typeof codeOrKind === 'number' ? undefined : codeOrKind
    super(message, typeof statusOrOptions === 'object' ? statusOrOptions : options)
    if (k !== undefined) {
      if (k.code === null || k.status === null) throw new TypeError(`${k.name} is not an API error`)
      this.code = k.code
      this.status = k.status
    } else {
      this.code = codeOrKind as number
      this.status = typeof statusOrOptions === 'number' ? statusOrOptions : HTTP_STATUS[this.code] ?? 400
    }
    this.name = 'ApiError'
  }

  /** The error's catalogue entry: its class's, or the generic kind of its code and status. */
  get kind (): ErrorKind {
    const own = (ERRORS as Record<string, ErrorKind>)[this.name]
    return own !== undefined && own.code === this.code && own.status === this.status ? own : kindFor(this.code, this.status)
  }
}

/** A class made by {@link createError}: `new X(...args)` is an ApiError of kind `X.kind`. */
export interface ApiErrorClass<A extends unknown[]> {
  new (...args: A): ApiError
  readonly kind: ErrorKind
  /**
   * An error of this kind whose message is `message` as given, not `format(...args)`: for a
   * case the kind's message form does not fit (a 404 that is not "<what> not found").
   */
  withMessage: (message: string) => ApiError
}

/** The argument {@link ApiErrorClass.withMessage} passes to a kind's constructor: its whole message. */
class WholeMessage {
  constructor (readonly text: string) {}
}

/**
 * Defines the class of catalogue kind `name` (fastify's `createError`): its instances have
 * that name, code and status; the message is `format(...args)`, by default the one argument.
 */
export function createError<A extends unknown[] = [message: string]> (
  name: ErrorName, format: (...args: A) => string = (...args) => String(args[0])
): ApiErrorClass<A> {
  const k: ErrorKind = ERRORS[name]
  const C = class extends ApiError {
    static readonly kind = k
    static withMessage (message: string): ApiError {
      return new C(...([new WholeMessage(message)] as unknown[] as A))
    }

    constructor (...args: A) {
      super(k, args[0] instanceof WholeMessage ? args[0].text : format(...args))
      this.name = k.name
    }
  }
  Object.defineProperty(C, 'name', { value: k.name })
  return C
}

/* The generic kinds' classes. */
export const BadRpcError = createError('BadRpcError')
export const RefusedError = createError('RefusedError')
/** `<what> not found`, and `; <hint>` (where to see the known ones) when given. */
export const NotFoundError = createError('NotFoundError', (what: string, hint?: string) => hint === undefined ? `${what} not found` : `${what} not found; ${hint}`)
export const AclDeniedError = createError('AclDeniedError', (clientId: string, filter: string) => `the ACL denies client ${clientId} a subscription to ${filter}`)
export const BodyTooLargeError = createError('BodyTooLargeError', (maxBytes: number) => `request body larger than ${maxBytes} bytes`)
/** `what` (`request body`, `actions` ...) nests deeper than `max` levels (node/json-depth.ts). */
export const JsonTooDeepError = createError('JsonTooDeepError', (what: string, max: number) => `${what} nests objects and arrays more than ${max} levels deep; the limit is ${max}`)
export const InternalError = createError('InternalError')
export const WrongCredentialsError = createError('WrongCredentialsError', () => ERRORS.WrongCredentialsError.message)
export const EmptyCredentialsError = createError('EmptyCredentialsError', () => ERRORS.EmptyCredentialsError.message)
export const UserNotFoundError = createError('UserNotFoundError')
export const AdminNotDeletableError = createError('AdminNotDeletableError')
export const MissingParameterError = createError('MissingParameterError')
export const WrongTypeError = createError('WrongTypeError')
export const NotJsonError = createError('NotJsonError')
export const ClientOfflineError = createError('ClientOfflineError')
export const UserExistsError = createError('UserExistsError')
export const OldPasswordWrongError = createError('OldPasswordWrongError')
export const BadTopicError = createError('BadTopicError')
export const BadQosError = createError('BadQosError')
export const SqlNotMatchError = createError('SqlNotMatchError', () => ERRORS.SqlNotMatchError.message)

/** `what` does not exist: HTTP 404 with code 102 (the spec has no not-found code). */
export function notFound (what: string): ApiError {
  return new NotFoundError(what)
}

/**
 * The API's answer for anything a handler or service threw: an {@link ApiError} (every
 * catalogue kind is one) as it is; anything else is an {@link InternalError} (HTTP 500,
 * code 102) whose message is kept.
 */
export function toApiError (err: unknown): ApiError {
  if (err instanceof ApiError) return err
  return new InternalError((err as { message?: unknown } | null)?.message as string | undefined ?? String(err))
}

/**
 * The code a control command's failure is answered with: an {@link ApiError}'s; else a spec
 * code the error carries itself (a ControlError passing on a node's answer, or a plugin's
 * command that throws its own error with a code); else none (the message alone).
 */
export function errorCode (err: unknown): number | undefined {
  if (err instanceof ApiError) return err.code
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'number' && Number.isFinite(code) ? code : undefined
}

/** Markdown table cell text: pipes escaped, `<...>` outside code spans escaped, line breaks flattened. */
function cell (text: string): string {
  return text.replace(/\n/g, ' ').split('`')
    .map((part, i) => i % 2 === 1 ? part : part.replace(/</g, '&lt;').replace(/>/g, '&gt;'))
    .join('`').replace(/\|/g, '\\|')
}

/**
 * `docs/errors.md`: every kind with its name, code, HTTP status, message and where it arises,
 * rendered from {@link ERRORS}. Committed; `test/node/errors-doc.test.ts` checks it.
 */
export function renderErrorsDoc (): string {
  const rows = (kinds: ErrorKind[]): string[] => kinds.map(k =>
    `| \`${k.name}\` | ${k.code ?? '-'} | ${k.status ?? '-'} | ${cell(k.message)} | ${cell(k.where)} |`)
  const head = ['| name | code | HTTP status | message | where it arises |', '|---|---|---|---|---|']
  const api = errorKinds().filter(k => k.status !== null)
  const cli = errorKinds().filter(k => k.status === null)
  return [
    '# Errors',
    '',
    '<!-- Generated from node/errors.ts by renderErrorsDoc(); do not edit by hand. Regenerate with',
    '     UPDATE_ERRORS_DOC=1 NODE_OPTIONS=--experimental-vm-modules npx jest test/node/errors-doc -->',
    '',
    'Every error the management API answers or `starling-ctl` prints is one of the kinds below.',
    'The API answers `{"code": <code>, "message": "<message>"}` with the HTTP status shown;',
    '`starling-ctl` prints the message on stderr and exits with 1 (the control socket\'s answer',
    'carries the code).',
    'The name is stable: it is the error class in `node/errors.ts` (or the subsystem module that',
    'extends it) and the error\'s `name`. In messages, `<...>` marks what varies.',
    '',
    'The spec (section Errors) defines the codes 101-115; 116 (wrong `qos`) is Starling\'s, and',
    'the spec leaves the HTTP status open. Code 102 ("unknown error") covers everything the spec',
    'has no code for, so its status tells the cases apart: 400 refused input, 403 denied by the',
    'ACL, 404 not found, 413 body too large, 500 the node\'s own failure. An error relayed from',
    'another node keeps its code, status and message.',
    '',
    '## API and starling-ctl',
    '',
    ...head,
    ...rows(api),
    '',
    '## starling-ctl only',
    '',
    'These never reach the API; the command fails with the message and no code.',
    '',
    ...head,
    ...rows(cli),
    ''
  ].join('\n')
}
