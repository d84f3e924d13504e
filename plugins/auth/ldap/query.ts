/**
 * How `svc_auth_ldap` finds a client's entry, from EMQ X 4.4's keys: the search base
 * `auth.ldap.custom_base_dn` (default `${username_attr}=${user},${device_dn}`) and the filter
 * `(objectClass=<match_objectclass>)`, or the one `auth.ldap.filters.<n>.key|value|op` build.
 *
 * EMQ X's variables are `${user}` (the MQTT username), `${username_attr}` and `${device_dn}`
 * (their keys' values). They are compiled once, at load, into the framework's templates, so
 * the username goes in through {@link renderLdapDn} / {@link renderLdapFilter}: escaped per
 * RFC 4514 / RFC 4515 (a username `*)(uid=*` is a literal value, never filter syntax). The
 * configured texts are trusted as written in the DN, and escaped as values in the filter.
 */
import { ConfigError } from '../../../node/config/index.js'
import { escapeLdapFilterValue, renderLdapDn, renderLdapFilter, type AuthContext, type Template, type TemplatePart } from '../backend/index.js'

/** The compiled search of one plugin configuration. */
export interface LdapQuery {
  /** The search base for a client. */
  baseDn: (ctx: AuthContext) => string
  /** The search filter for a client. */
  filter: (ctx: AuthContext) => string
  /** The filter as configured, for logs and docs (`${user}` kept). */
  readonly filterSource: string
}

/** One `auth.ldap.filters.<n>` entry. */
export interface LdapFilterEntry { key: string, value: string, op?: string }

/** What {@link compileLdapQuery} reads. */
export interface LdapQueryConfig {
  customBaseDn: string
  deviceDn: string
  usernameAttr: string
  matchObjectclass: string
  /** In the order of their `<n>`. */
  filters: readonly LdapFilterEntry[]
}

/** An attribute description: a name (with options) or an OID. */
const ATTRIBUTE = /^(?:[A-Za-z][A-Za-z0-9-]*|\d+(?:\.\d+)+)(?:;[A-Za-z0-9-]+)*$/

/**
 * `source` with `${username_attr}` and `${device_dn}` replaced by `fixed`, and `${user}` a
 * placeholder; `escapeText` escapes the fixed text (for filters).
 */
function emqxTemplate (source: string, fixed: { usernameAttr: string, deviceDn: string }, escapeText: (s: string) => string = (s) => s): Template {
  const parts: TemplatePart[] = []
  const pieces = source.split('${user}')
  pieces.forEach((piece, i) => {
    if (i > 0) parts.push({ key: 'u' })
    const text = piece.split('${username_attr}').join(fixed.usernameAttr).split('${device_dn}').join(fixed.deviceDn)
    if (text !== '') parts.push({ text: escapeText(text) })
  })
  return { source, parts, keys: pieces.length > 1 ? ['u'] : [] }
}

/** Compiles the search; a bad filter key or op throws a {@link ConfigError}. */
export function compileLdapQuery (cfg: LdapQueryConfig): LdapQuery {
  const fixed = { usernameAttr: cfg.usernameAttr, deviceDn: cfg.deviceDn }
  if (!ATTRIBUTE.test(cfg.usernameAttr)) throw ConfigError.badValue('auth.ldap.username.attributetype', cfg.usernameAttr, 'an attribute name such as uid', 'plugin config')
  const base = emqxTemplate(cfg.customBaseDn, fixed)
  const equality = (key: string, value: string, where: string): Template => {
    const attr = key.split('${username_attr}').join(cfg.usernameAttr)
    if (!ATTRIBUTE.test(attr)) throw ConfigError.badValue(where, key, 'an attribute name such as objectClass', 'plugin config')
    const v = emqxTemplate(value, fixed, escapeLdapFilterValue)
    return { source: `(${attr}=${value})`, parts: [{ text: `(${attr}=` }, ...v.parts, { text: ')' }], keys: v.keys }
  }
  let filter: Template
  if (cfg.filters.length === 0) {
    filter = { source: `(objectClass=${cfg.matchObjectclass})`, parts: [{ text: `(objectClass=${escapeLdapFilterValue(cfg.matchObjectclass)})` }], keys: [] }
  } else {
    // EMQ X: each entry's op joins it to the next, left to right: ((1 op1 2) op2 3) ...
    filter = equality(cfg.filters[0].key, cfg.filters[0].value, 'auth.ldap.filters.key')
    for (let i = 1; i < cfg.filters.length; i++) {
      const op = cfg.filters[i - 1].op ?? 'and'
      if (op !== 'and' && op !== 'or') throw ConfigError.badValue('auth.ldap.filters.op', op, 'and or or', 'plugin config')
      const next = equality(cfg.filters[i].key, cfg.filters[i].value, 'auth.ldap.filters.key')
      filter = {
        source: `(${op === 'and' ? '&' : '|'}${filter.source}${next.source})`,
        parts: [{ text: op === 'and' ? '(&' : '(|' }, ...filter.parts, ...next.parts, { text: ')' }],
        keys: [...new Set([...filter.keys, ...next.keys])]
      }
    }
  }
  return {
    baseDn: (ctx) => renderLdapDn(base, ctx),
    filter: (ctx) => renderLdapFilter(filter, ctx),
    filterSource: filter.source
  }
}
