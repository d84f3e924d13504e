/**
 * Reading acl.conf: EMQ X's term syntax, every who/access/topic form, comments and
 * multi-line rules, and errors that name the file, the line and what was expected.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { AclFileError, loadAclFile, parseAclText, parseTerms, type AclRule } from '../../../node/acl/index.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/** The one rule of `text`. */
function one (text: string): AclRule {
  const rules = parseAclText(text, 'acl.conf')
  expect(rules).toHaveLength(1)
  return rules[0]
}

/** The message of the error `text` raises. */
function errorOf (text: string, source = 'etc/acl.conf'): string {
  try {
    parseAclText(text, source)
  } catch (err) {
    expect(err).toBeInstanceOf(AclFileError)
    return (err as Error).message
  }
  throw new Error('no error raised')
}

describe('the shipped etc/acl.conf', () => {
  it("holds EMQ X's four default rules in order", () => {
    const rules = loadAclFile(join(ROOT, 'etc/acl.conf'), ROOT)
    expect(rules.map(r => [r.permission, r.who?.kind ?? null, r.access, r.topics.map(t => t.eq ? `{eq,${t.text}}` : t.text)])).toEqual([
      ['allow', 'user', 'subscribe', ['$SYS/#']],
      ['allow', 'ipaddr', 'pubsub', ['$SYS/#', '#']],
      ['deny', 'all', 'subscribe', ['$SYS/#', '{eq,#}']],
      ['allow', null, 'pubsub', []]
    ])
    expect(rules.map(r => r.line)).toEqual([21, 23, 25, 27])
  })
})

describe('term syntax', () => {
  it('reads atoms, quoted atoms, strings, binaries, integers, tuples and lists', () => {
    expect(parseTerms("{a, 'and', \"s\\\"q\", <<\"b\">>, 12, [x, []], {}}.", 'f')).toEqual([{
      kind: 'tuple',
      line: 1,
      items: [
        { kind: 'atom', value: 'a', line: 1 },
        { kind: 'atom', value: 'and', line: 1 },
        { kind: 'string', value: 's"q', line: 1 },
        { kind: 'string', value: 'b', line: 1 },
        { kind: 'integer', value: 12, line: 1 },
        { kind: 'list', line: 1, items: [{ kind: 'atom', value: 'x', line: 1 }, { kind: 'list', items: [], line: 1 }] },
        { kind: 'tuple', items: [], line: 1 }
      ]
    }])
  })

  it('ignores % comments, blank lines and whitespace anywhere', () => {
    const rules = parseAclText([
      '%% a comment line',
      '',
      '  {allow,   % trailing comment',
      '\t{user, "u"},',
      '   publish,',
      '   ["a/b",  % first topic',
      '    "c"]',
      '  }  .   %% end',
      '{deny,all}.'
    ].join('\n'), 'f')
    expect(rules).toHaveLength(2)
    expect(rules[0]).toMatchObject({ permission: 'allow', who: { kind: 'user', name: 'u' }, access: 'publish', line: 3 })
    expect(rules[0].topics.map(t => t.text)).toEqual(['a/b', 'c'])
    expect(rules[1]).toMatchObject({ permission: 'deny', who: null, line: 9 })
  })

  it('joins adjacent strings as Erlang does', () => {
    expect(one('{allow, all, publish, ["a/" "b"]}.').topics[0].text).toBe('a/b')
  })

  it('accepts an empty file and a file of comments only', () => {
    expect(parseAclText('', 'f')).toEqual([])
    expect(parseAclText('%% nothing\n\n%% here\n', 'f')).toEqual([])
  })
})

describe('rule forms', () => {
  it.each([
    ['{allow, all}.', { permission: 'allow', who: null }],
    ['{deny, all}.', { permission: 'deny', who: null }],
    ['{allow, all, pubsub, ["#"]}.', { who: { kind: 'all' }, access: 'pubsub' }],
    ['{allow, {user, "dashboard"}, subscribe, ["$SYS/#"]}.', { who: { kind: 'user', name: 'dashboard' }, access: 'subscribe' }],
    ['{allow, {username, "u"}, publish, ["t"]}.', { who: { kind: 'user', name: 'u' }, access: 'publish' }],
    ['{allow, {user, all}, publish, ["t"]}.', { who: { kind: 'user', name: null } }],
    ['{deny, {client, "c1"}, publish, ["t"]}.', { permission: 'deny', who: { kind: 'client', id: 'c1' } }],
    ['{deny, {clientid, "c1"}, publish, ["t"]}.', { who: { kind: 'client', id: 'c1' } }],
    ['{deny, {client, all}, publish, ["t"]}.', { who: { kind: 'client', id: null } }],
    ['{allow, {ipaddr, "127.0.0.1"}, pubsub, ["#"]}.', { who: { kind: 'ipaddr', blocks: [{ family: 4, prefix: 32, text: '127.0.0.1' }] } }],
    ['{allow, {ipaddr, "192.168.0.0/24"}, pubsub, ["#"]}.', { who: { kind: 'ipaddr', blocks: [{ family: 4, prefix: 24 }] } }],
    ['{allow, {ipaddr, "fd00::/8"}, pubsub, ["#"]}.', { who: { kind: 'ipaddr', blocks: [{ family: 6, prefix: 8 }] } }],
    ['{allow, {ipaddrs, ["10.0.0.1", "::1"]}, pubsub, ["#"]}.', { who: { kind: 'ipaddr', blocks: [{ family: 4 }, { family: 6, prefix: 128 }] } }],
    ["{allow, {'and', [{user, \"u\"}, {client, \"c\"}]}, publish, [\"t\"]}.", { who: { kind: 'and', items: [{ kind: 'user', name: 'u' }, { kind: 'client', id: 'c' }] } }],
    ["{allow, {'or', [{user, \"u\"}, {ipaddr, \"10.0.0.0/8\"}]}, publish, [\"t\"]}.", { who: { kind: 'or', items: [{ kind: 'user' }, { kind: 'ipaddr' }] } }]
  ])('%s', (text, expected) => {
    expect(one(text)).toMatchObject(expected)
  })

  it('reads topics as filters, {eq, T} as literal, and marks %u/%c levels', () => {
    const rule = one('{allow, all, pubsub, ["a/+/#", {eq, "#"}, "users/%u/#", "c/%c", "x/%u-data", {eq, "e/%u"}]}.')
    expect(rule.topics.map(t => [t.text, t.eq, t.placeholders])).toEqual([
      ['a/+/#', false, false],
      ['#', true, false],
      ['users/%u/#', false, true],
      ['c/%c', false, true],
      ['x/%u-data', false, false],
      ['e/%u', true, false]
    ])
  })

  it('takes a single topic string in place of the list', () => {
    expect(one('{allow, all, publish, "t/1"}.').topics.map(t => t.text)).toEqual(['t/1'])
  })
})

describe('errors name the file, the line and what was expected', () => {
  it.each([
    ['{allow, all}.\n\n{alow, all, pubsub, ["#"]}.', "etc/acl.conf:3: expected allow or deny, got 'alow'"],
    ['{allow, all}', "etc/acl.conf:1: expected '.' at the end of the rule, got end of file"],
    ['{allow, all}\n{deny, all}.', "etc/acl.conf:2: expected '.' at the end of the rule, got '{'"],
    ['{allow, all, pubsub}.', 'etc/acl.conf:1: expected a rule of 4 elements {allow | deny, Who, Access, Topics} or 2 {allow | deny, all}, got 3'],
    ['{allow, everyone}.', "etc/acl.conf:1: expected all (a 2-element rule is {allow, all}), got 'everyone'"],
    ['allow.', "etc/acl.conf:1: expected {allow | deny, Who, Access, Topics} or {allow | deny, all}, got 'allow'"],
    ['{allow, all, pub, ["#"]}.', "etc/acl.conf:1: expected subscribe, publish or pubsub, got 'pub'"],
    ['{allow, {users, "x"}, pubsub, ["#"]}.', `etc/acl.conf:1: expected a who: all, {user, "name"}, {client, "id"}, {ipaddr, "cidr"}, {'and', [...]} or {'or', [...]}, got {users,"x"}`],
    ['{allow, {user, dashboard}, pubsub, ["#"]}.', "etc/acl.conf:1: expected a user name string, got 'dashboard'"],
    ['{allow, {ipaddr, "300.1.1.1"}, pubsub, ["#"]}.', 'etc/acl.conf:1: expected an IP address or CIDR block such as "127.0.0.1", "192.168.0.0/24" or "fd00::/8", got "300.1.1.1"'],
    ['{allow, {ipaddr, "10.0.0.0/33"}, pubsub, ["#"]}.', 'etc/acl.conf:1: expected an IP address or CIDR block such as "127.0.0.1", "192.168.0.0/24" or "fd00::/8", got "10.0.0.0/33"'],
    ['{allow, {user, {re, "^a"}}, pubsub, ["#"]}.', 'etc/acl.conf:1: regular expressions ({re, ...}) are not supported in ACL rules'],
    ['{allow, all, pubsub, [a]}.', "etc/acl.conf:1: expected a topic string or {eq, \"topic\"}, got 'a'"],
    ['{allow, all, pubsub, ["a/#/b"]}.', 'etc/acl.conf:1: bad topic filter "a/#/b": \'#\' must be the last level on its own'],
    ['{allow, all, pubsub, [""]}.', 'etc/acl.conf:1: expected a topic, got an empty string'],
    ['{allow, all, pubsub, #}.', 'etc/acl.conf:1: unexpected character "#"'],
    ['{allow, All}.', 'etc/acl.conf:1: expected a term, got All (a variable; atoms start with a lower-case letter)'],
    ['{allow, all, pubsub, ["a}.\n', 'etc/acl.conf:1: unterminated string: missing the closing "'],
    ['{allow, all, pubsub, ["a" "b"}.', "etc/acl.conf:1: expected ',' or ']', got '}'"]
  ])('%j', (text, message) => {
    expect(errorOf(text)).toBe(message)
  })

  it('names the line of the offending term inside a multi-line rule', () => {
    const text = '%% header\n{allow,\n  {user, "u"},\n  publish,\n  ["ok",\n   "a/#/b"]}.\n'
    expect(errorOf(text)).toBe('etc/acl.conf:6: bad topic filter "a/#/b": \'#\' must be the last level on its own')
  })

  it('carries the file and line on the error', () => {
    try {
      parseAclText('{allow, all}.\n{alow, all}.', 'x.conf')
      throw new Error('no error raised')
    } catch (err) {
      expect(err).toMatchObject({ name: 'AclFileError', code: 'STARLING_ACL_INVALID', file: 'x.conf', line: 2, detail: "expected allow or deny, got 'alow'" })
    }
  })

  it('names a file relative to the working directory, and a missing file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'acl-'))
    try {
      writeFileSync(join(dir, 'acl.conf'), '{allow, all}.\n{allow, all, publish, ["t"]}\n')
      expect(() => loadAclFile(join(dir, 'acl.conf'), dir)).toThrow("acl.conf:2: expected '.' at the end of the rule, got end of file")
      expect(() => loadAclFile(join(dir, 'acl.conf'), '/nowhere/else')).toThrow(`${join(dir, 'acl.conf')}:2: `)
      expect(() => loadAclFile(join(dir, 'missing.conf'), dir)).toThrow(/^missing\.conf: cannot read the ACL file \(acl_file\): ENOENT/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
