/**
 * EMQ X 4.4's auth placeholders (`%u` username, `%c` client id, `%a` peer IP, `%r` protocol,
 * `%P` password, `%p` socket port, `%C` certificate CN, `%d` certificate subject DN, `%A`
 * access 1 sub / 2 pub, `%t` topic, `%m` mountpoint), compiled once per configured
 * template and rendered per request, for every external auth/ACL backend.
 *
 * Invariants:
 * - A template is parsed once, when its plugin loads; rendering walks the compiled parts
 *   and never re-parses.
 * - SQL: a value never enters the SQL text. Every placeholder outside string literals,
 *   identifiers and comments, and every string literal that is exactly one placeholder
 *   (`'%u'`, as EMQ X writes them), becomes a bound parameter (`$1..$n` for PostgreSQL, `?`
 *   for MySQL); the values go in the values array. A placeholder *inside* a longer literal
 *   (`'%u%'`) is left as literal text: part of a literal cannot be bound.
 * - Redis: the command is split into arguments on whitespace first; values are substituted
 *   inside each argument, so a value (spaces and all) can never add or split arguments.
 * - LDAP: values are escaped for filters (RFC 4515) or DNs (RFC 4514) as they go in.
 * - Plain strings (HTTP params and URLs): substituted as they are; the caller encodes.
 *
 * Missing values (no username, no certificate, ...): EMQ X 4.4 sent the text `undefined`
 * (SQL, HTTP) or left `%u` in place (Redis), so a user literally named "undefined" or
 * "%u" could be looked up for an anonymous client. Starling binds SQL `NULL` instead (no
 * `= NULL` comparison is ever true, so the lookup finds nothing: "ignore") and renders an
 * empty string everywhere else; {@link missingPlaceholders} lets a backend skip a request
 * whose template needs a value the client did not give.
 */
import { ConfigError } from '../../../node/config/index.js'
import { compileArgv, renderArgv } from '../../../node/template/index.js'

/**
 * What a backend knows about the client and the request, for placeholders. `access` is
 * EMQ X's `%A`: 1 subscribe, 2 publish.
 */
export interface AuthContext {
  clientId: string
  username?: string
  /** The CONNECT password: bytes as sent (rendered as UTF-8), or text. */
  password?: Buffer | string
  /** The peer's IP address as the socket reports it (an IPv4-mapped IPv6 address is rendered as IPv4). */
  peerhost: string
  /** `mqtt`, `mqtt-sn`, `coap`, `lwm2m` or `stomp`. */
  protocol?: string
  /** The listener's port the client connected to. */
  sockport?: number
  /** Common name of the client certificate's subject. */
  certCn?: string
  /** Subject DN of the client certificate. */
  certDn?: string
  /** 1 subscribe, 2 publish (ACL requests only). */
  access?: 1 | 2
  /** The topic or filter of an ACL request. */
  topic?: string
  mountpoint?: string
}

/** The placeholder letters and the {@link AuthContext} field each stands for. */
export const PLACEHOLDERS = {
  u: 'username',
  c: 'clientId',
  a: 'peerhost',
  r: 'protocol',
  P: 'password',
  p: 'sockport',
  C: 'certCn',
  d: 'certDn',
  A: 'access',
  t: 'topic',
  m: 'mountpoint'
} as const satisfies Record<string, keyof AuthContext>

/** A placeholder letter: `u` for `%u` ... */
export type PlaceholderKey = keyof typeof PLACEHOLDERS

/** One piece of a compiled template: literal text or a placeholder. */
export type TemplatePart = { readonly text: string } | { readonly key: PlaceholderKey }

/** A template compiled for string rendering. */
export interface Template {
  /** The template as configured. */
  readonly source: string
  readonly parts: readonly TemplatePart[]
  /** The placeholders it uses, in order of appearance, each once. */
  readonly keys: readonly PlaceholderKey[]
}

/** Where a template came from, for the {@link ConfigError} a bad one raises. */
export interface ConfigOrigin {
  /** The configuration key (`auth.mysql.auth_query`). */
  readonly key: string
  /** The file or environment variable; defaults to `plugin config`. */
  readonly source?: string
}

/** Whether `letter` is a placeholder letter. */
export function isPlaceholderKey (letter: string): letter is PlaceholderKey {
  return Object.prototype.hasOwnProperty.call(PLACEHOLDERS, letter)
}

/**
 * Splits `source` into text and placeholders. `%` followed by a placeholder letter is
 * always a placeholder (EMQ X has no escape for it); any other `%` is text.
 */
export function parseTemplate (source: string): Template {
  const parts: TemplatePart[] = []
  const keys: PlaceholderKey[] = []
  let text = ''
  for (let i = 0; i < source.length; i++) {
    const letter = source[i + 1]
    if (source[i] === '%' && letter !== undefined && isPlaceholderKey(letter)) {
      if (text !== '') parts.push({ text })
      text = ''
      parts.push({ key: letter })
      if (!keys.includes(letter)) keys.push(letter)
      i++
    } else {
      text += source[i]
    }
  }
  if (text !== '') parts.push({ text })
  return { source, parts, keys }
}

/** The text a placeholder stands for in `ctx`; undefined when the client did not give it. */
export function placeholderValue (ctx: AuthContext, key: PlaceholderKey): string | undefined {
  switch (key) {
    case 'u': return ctx.username
    case 'c': return ctx.clientId
    case 'a': return ipText(ctx.peerhost)
    case 'P': return typeof ctx.password === 'string' ? ctx.password : ctx.password?.toString('utf8')
    case 'p': return ctx.sockport === undefined ? undefined : String(ctx.sockport)
    case 'A': return ctx.access === undefined ? undefined : String(ctx.access)
    default: return ctx[PLACEHOLDERS[key]] as string | undefined
  }
}

/** The placeholders of `template` that `ctx` has no value for. */
export function missingPlaceholders (template: { readonly keys: readonly PlaceholderKey[] }, ctx: AuthContext): PlaceholderKey[] {
  return template.keys.filter((k) => placeholderValue(ctx, k) === undefined)
}

/**
 * `template` with each placeholder replaced by `escape(value)` (a missing value is `''`).
 * Without `escape` the values go in as they are: for HTTP params and URLs, which the
 * caller encodes.
 */
export function renderString (template: Template, ctx: AuthContext, escape?: (value: string) => string): string {
  let out = ''
  for (const part of template.parts) {
    if ('text' in part) out += part.text
    else {
      const value = placeholderValue(ctx, part.key) ?? ''
      out += escape === undefined ? value : escape(value)
    }
  }
  return out
}

/** A Redis command compiled into argument templates. */
export interface RedisCommandTemplate {
  readonly source: string
  /** One template per argument; the first is the command name. */
  readonly args: readonly Template[]
  /** The placeholders it uses, each once. */
  readonly keys: readonly PlaceholderKey[]
}

/**
 * Compiles a Redis command such as `HMGET mqtt_user:%u password salt`: split on whitespace
 * (as EMQ X's `string:tokens(Cmd, " ")`, without quoting), then each argument parsed.
 */
export function compileRedisCommand (source: string, origin?: ConfigOrigin): RedisCommandTemplate {
  const argv = compileArgv(source, parseTemplate)
  if (argv === undefined) throw badTemplate(source, 'a Redis command such as HMGET mqtt_user:%u password', origin)
  return { source, args: argv.args, keys: [...new Set(argv.args.flatMap((a) => a.keys))] }
}

/** The command's argv for `ctx`: exactly as many arguments as the template has words. */
export function renderRedisCommand (command: RedisCommandTemplate, ctx: AuthContext): string[] {
  return renderArgv(command, (arg) => renderString(arg, ctx))
}

/** Escapes a value for an LDAP search filter (RFC 4515 section 3): `* ( ) \ NUL` as `\XX`. */
export function escapeLdapFilterValue (value: string): string {
  return value.replace(/[*()\\\0]/g, (c) => '\\' + c.charCodeAt(0).toString(16).padStart(2, '0'))
}

/**
 * Escapes a value for an LDAP distinguished name's attribute value (RFC 4514 section 2.4):
 * `" + , ; < > \ =` get a backslash, NUL is `\00`, and so are a leading space or `#` and a
 * trailing space.
 */
export function escapeLdapDnValue (value: string): string {
  let out = ''
  const last = value.length - 1
  for (let i = 0; i <= last; i++) {
    const c = value[i]
    if (c === '\0') out += '\\00'
    else if (DN_SPECIALS.includes(c) || (i === 0 && (c === ' ' || c === '#')) || (i === last && c === ' ')) out += '\\' + c
    else out += c
  }
  return out
}

/** Characters escaped with a backslash anywhere in a DN value (RFC 4514: `escaped`, plus `=`). */
const DN_SPECIALS = '"+,;<>\\='

/** `template` rendered as an LDAP filter, each value escaped per RFC 4515. */
export function renderLdapFilter (template: Template, ctx: AuthContext): string {
  return renderString(template, ctx, escapeLdapFilterValue)
}

/** `template` rendered as an LDAP DN, each value escaped per RFC 4514. */
export function renderLdapDn (template: Template, ctx: AuthContext): string {
  return renderString(template, ctx, escapeLdapDnValue)
}

/** The IP address text for `%a`: an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as `a.b.c.d`. */
function ipText (peerhost: string): string {
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(peerhost) ? peerhost.slice(7) : peerhost
}

/** A {@link ConfigError} for a template that cannot be used. */
export function badTemplate (template: string, allowed: string, origin?: ConfigOrigin): ConfigError {
  return ConfigError.badValue(origin?.key ?? 'template', template, allowed, origin?.source ?? 'plugin config')
}
