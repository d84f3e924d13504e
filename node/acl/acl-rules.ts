/**
 * ACL rules: what the terms of an `acl.conf` mean. A rule is
 * `{allow | deny, Who, subscribe | publish | pubsub, Topics}` or `{allow | deny, all}`
 * (EMQ X's `emqx_access_rule`); this file turns parsed terms into {@link AclRule} values
 * and refuses anything else with the line and what was expected.
 */
import { readFileSync } from 'node:fs'
import { isAbsolute, relative } from 'node:path'
import { AclFileError } from './acl-error.js'
import { describeTerm, parseTerms, type Term } from './term-parser.js'
import { parseCidr, type CidrBlock } from './ip-address.js'
import { filterError } from '../mqtt/topic.js'

/** What a matching rule decides. */
export type AclPermission = 'allow' | 'deny'

/** Which packets a rule is about; `pubsub` is both. */
export type AclAccess = 'subscribe' | 'publish' | 'pubsub'

/**
 * Who a rule applies to. `name`/`id` null is `{user, all}` / `{client, all}` (anyone).
 * `ipaddr` holds one block per address of `{ipaddr, "..."}` or `{ipaddrs, [...]}`.
 */
export type AclWho =
  | { kind: 'all' }
  | { kind: 'user', name: string | null }
  | { kind: 'client', id: string | null }
  | { kind: 'ipaddr', blocks: CidrBlock[] }
  | { kind: 'and' | 'or', items: AclWho[] }

/**
 * One topic of a rule. `eq` topics match the topic or filter character for character
 * (`{eq, "#"}` is the filter `#` itself, not everything). Other topics are filters whose
 * `levels` are matched level by level; a level that is exactly `%u` or `%c` stands for the
 * client's username or client id (EMQ X 4 substitutes whole levels only).
 */
export interface AclTopic {
  /** The topic as written. */
  readonly text: string
  readonly eq: boolean
  /** `text` split on `/`. */
  readonly levels: readonly string[]
  /** Whether a level is `%u` or `%c`. */
  readonly placeholders: boolean
}

/** A compiled rule. `who === null` is the catch-all form `{allow, all}` / `{deny, all}`. */
export interface AclRule {
  readonly permission: AclPermission
  readonly who: AclWho | null
  readonly access: AclAccess
  /** Empty for the catch-all form. */
  readonly topics: readonly AclTopic[]
  /** Line of the rule in its file. */
  readonly line: number
}

const WHO_FORMS = `all, {user, "name"}, {client, "id"}, {ipaddr, "cidr"}, {'and', [...]} or {'or', [...]}`

/** Compiles the parsed terms of `source` into rules, in file order. */
export function compileAclRules (terms: readonly Term[], source: string): AclRule[] {
  const fail = (t: Term, detail: string): never => { throw new AclFileError(source, t.line, detail) }
  const got = (t: Term, what: string): never => fail(t, `expected ${what}, got ${describeTerm(t)}`)
  const isAtom = (t: Term, ...values: string[]): boolean => t.kind === 'atom' && values.includes(t.value)

  function rule (t: Term): AclRule {
    if (t.kind !== 'tuple') return got(t, '{allow | deny, Who, Access, Topics} or {allow | deny, all}')
    const [perm, who, access, topics] = t.items
    if (t.items.length !== 2 && t.items.length !== 4) {
      return fail(t, `expected a rule of 4 elements {allow | deny, Who, Access, Topics} or 2 {allow | deny, all}, got ${t.items.length}`)
    }
    if (!isAtom(perm, 'allow', 'deny')) return got(perm, 'allow or deny')
    const permission = (perm as { value: AclPermission }).value
    if (t.items.length === 2) {
      if (!isAtom(who, 'all')) return got(who, `all (a 2-element rule is {${permission}, all})`)
      return { permission, who: null, access: 'pubsub', topics: [], line: t.line }
    }
    const whoValue = compileWho(who)
    if (!isAtom(access, 'subscribe', 'publish', 'pubsub')) return got(access, 'subscribe, publish or pubsub')
    return {
      permission,
      who: whoValue,
      access: (access as { value: AclAccess }).value,
      topics: compileTopics(topics),
      line: t.line
    }
  }

  function compileWho (t: Term): AclWho {
    if (isAtom(t, 'all')) return { kind: 'all' }
    if (t.kind !== 'tuple' || t.items.length !== 2 || t.items[0].kind !== 'atom') return got(t, `a who: ${WHO_FORMS}`)
    const [tag, arg] = t.items
    switch ((tag as { value: string }).value) {
      case 'user':
      case 'username':
        if (isAtom(arg, 'all')) return { kind: 'user', name: null }
        return { kind: 'user', name: text(arg, 'a user name string') }
      case 'client':
      case 'clientid':
        if (isAtom(arg, 'all')) return { kind: 'client', id: null }
        return { kind: 'client', id: text(arg, 'a client id string') }
      case 'ipaddr':
        return { kind: 'ipaddr', blocks: [cidr(arg)] }
      case 'ipaddrs':
        if (arg.kind !== 'list') return got(arg, 'a list of IP addresses or CIDR blocks')
        return { kind: 'ipaddr', blocks: arg.items.map(cidr) }
      case 'and':
      case 'or':
        if (arg.kind !== 'list') return got(arg, `a list of whos in {'${(tag as { value: string }).value}', [...]}`)
        return { kind: (tag as { value: 'and' | 'or' }).value, items: arg.items.map(compileWho) }
      default:
        return got(t, `a who: ${WHO_FORMS}`)
    }
  }

  function text (t: Term, what: string): string {
    if (t.kind === 'tuple' && isAtom(t.items[0], 're')) return fail(t, 'regular expressions ({re, ...}) are not supported in ACL rules')
    if (t.kind !== 'string') return got(t, what)
    return t.value
  }

  function cidr (t: Term): CidrBlock {
    const value = text(t, 'an IP address or CIDR string such as "192.168.0.0/24"')
    return parseCidr(value) ?? fail(t, `expected an IP address or CIDR block such as "127.0.0.1", "192.168.0.0/24" or "fd00::/8", got ${JSON.stringify(value)}`)
  }

  function compileTopics (t: Term): AclTopic[] {
    // EMQ X also takes a single topic in place of the list
    if (t.kind === 'string') return [topic(t)]
    if (t.kind !== 'list') return got(t, 'a list of topics such as ["t/#", {eq, "#"}]')
    return t.items.map(topic)
  }

  function topic (t: Term): AclTopic {
    const eq = t.kind === 'tuple' && t.items.length === 2 && isAtom(t.items[0], 'eq')
    const value = eq ? text((t as { items: Term[] }).items[1], 'a topic string in {eq, "..."}') : text(t, 'a topic string or {eq, "topic"}')
    if (value === '') return fail(t, 'expected a topic, got an empty string')
    const error = eq ? null : filterError(value)
    if (error !== null) return fail(t, `bad topic filter ${JSON.stringify(value)}: ${error}`)
    const levels = value.split('/')
    return { text: value, eq, levels, placeholders: !eq && (levels.includes('%u') || levels.includes('%c')) }
  }

  return terms.map(rule)
}

/** Parses and compiles the text of an ACL file; `source` names it in errors. */
export function parseAclText (text: string, source: string): AclRule[] {
  return compileAclRules(parseTerms(text, source), source)
}

/**
 * Reads and compiles the ACL file at `file`. Errors name the file relative to the working
 * directory when it lies inside it (`etc/acl.conf:3: ...`), else by its full path.
 */
export function loadAclFile (file: string, cwd: string = process.cwd()): AclRule[] {
  const rel = relative(cwd, file)
  const source = rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new AclFileError(source, undefined, `cannot read the ACL file (acl_file): ${(err as Error).message}`)
  }
  return parseAclText(text, source)
}
