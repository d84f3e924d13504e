/**
 * Deciding publishes and subscribes: rules in order, first match decides, `acl_nomatch`
 * otherwise; subscriptions matched as EMQ X matches them (rule filter against the
 * subscribed filter, `{eq, T}` literally, shared subscriptions by their real filter).
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createAclRuleSet, parseAclText, type AclAction, type AclRuleSet } from '../../../node/acl/index.js'
import type { AccessClient } from '../../../node/mqtt/broker.js'

const DEFAULT_FILE = readFileSync(fileURLToPath(new URL('../../../etc/acl.conf', import.meta.url)), 'utf8')

function ruleSet (text: string, nomatch: 'allow' | 'deny' = 'allow'): AclRuleSet {
  return createAclRuleSet(parseAclText(text, 'acl.conf'), nomatch)
}

const client = (peerhost: string, username?: string, clientId = 'c1'): AccessClient => ({ clientId, username, peerhost })
const LOCAL = client('127.0.0.1')
const LOCAL_MAPPED = client('::ffff:127.0.0.1')
const REMOTE = client('10.1.2.3')
const DASHBOARD = client('10.1.2.3', 'dashboard')

type Case = [string, AccessClient, AclAction, string, 'allow' | 'deny']

describe('the default acl.conf, rules in order', () => {
  const acl = ruleSet(DEFAULT_FILE)
  it.each<Case>([
    ['a local client subscribes $SYS/#', LOCAL, 'subscribe', '$SYS/#', 'allow'],
    ['a local client over IPv6-mapped IPv4 subscribes $SYS/#', LOCAL_MAPPED, 'subscribe', '$SYS/#', 'allow'],
    ['a remote client subscribes $SYS/#', REMOTE, 'subscribe', '$SYS/#', 'deny'],
    ['a remote client subscribes $SYS/brokers', REMOTE, 'subscribe', '$SYS/brokers', 'deny'],
    ['a remote client subscribes $SYS/brokers/+/clients/#', REMOTE, 'subscribe', '$SYS/brokers/+/clients/#', 'deny'],
    ['a local client subscribes $SYS/brokers/+/clients/#', LOCAL, 'subscribe', '$SYS/brokers/+/clients/#', 'allow'],
    ['user dashboard (remote) subscribes $SYS/#', DASHBOARD, 'subscribe', '$SYS/#', 'allow'],
    ['user dashboard subscribes $SYS/brokers/n1/uptime', DASHBOARD, 'subscribe', '$SYS/brokers/n1/uptime', 'allow'],
    ['a local client subscribes literally #', LOCAL, 'subscribe', '#', 'allow'],
    ['a remote client subscribes literally #', REMOTE, 'subscribe', '#', 'deny'],
    ['user dashboard subscribes literally #', DASHBOARD, 'subscribe', '#', 'deny'],
    ['a remote client subscribes a/#', REMOTE, 'subscribe', 'a/#', 'allow'],
    ['a remote client subscribes +/#', REMOTE, 'subscribe', '+/#', 'allow'],
    ['a remote client subscribes t/1', REMOTE, 'subscribe', 't/1', 'allow'],
    ['a remote client publishes t/1', REMOTE, 'publish', 't/1', 'allow'],
    ['a remote client publishes $SYS/x (the broker refuses $SYS publishes itself)', REMOTE, 'publish', '$SYS/x', 'allow'],
    ['a remote client subscribes $share/g/$SYS/# by its real filter', REMOTE, 'subscribe', '$share/g/$SYS/#', 'deny'],
    ['a remote client subscribes $queue/# by its real filter', REMOTE, 'subscribe', '$queue/#', 'deny'],
    ['a remote client subscribes $share/g/a/b', REMOTE, 'subscribe', '$share/g/a/b', 'allow'],
    ['a local client subscribes $share/g/$SYS/#', LOCAL, 'subscribe', '$share/g/$SYS/#', 'allow']
  ])('%s: %s', (_what, who, action, topic, expected) => {
    expect(acl.decide(who, action, topic)).toBe(expected)
  })

  it('names the rule that decided', () => {
    expect(acl.matchingRule(REMOTE, 'subscribe', '$SYS/#')?.line).toBe(25)
    expect(acl.matchingRule(LOCAL, 'subscribe', '$SYS/#')?.line).toBe(23)
    expect(acl.matchingRule(DASHBOARD, 'subscribe', '$SYS/#')?.line).toBe(21)
    expect(acl.matchingRule(REMOTE, 'publish', 'a')?.line).toBe(27)
  })
})

describe('first match decides', () => {
  it('a deny before an allow wins, and the other way round', () => {
    expect(ruleSet('{deny, all, publish, ["t"]}.\n{allow, all, publish, ["t"]}.').decide(REMOTE, 'publish', 't')).toBe('deny')
    expect(ruleSet('{allow, all, publish, ["t"]}.\n{deny, all, publish, ["t"]}.').decide(REMOTE, 'publish', 't')).toBe('allow')
  })

  it('a rule for one action does not decide the other', () => {
    const acl = ruleSet('{deny, all, subscribe, ["t"]}.\n{deny, all, publish, ["p"]}.')
    expect(acl.decide(REMOTE, 'publish', 't')).toBe('allow')
    expect(acl.decide(REMOTE, 'subscribe', 't')).toBe('deny')
    expect(acl.decide(REMOTE, 'subscribe', 'p')).toBe('allow')
    expect(acl.decide(REMOTE, 'publish', 'p')).toBe('deny')
  })

  it('{deny, all} ends the list for everything after it', () => {
    const acl = ruleSet('{allow, {user, "u"}, pubsub, ["t"]}.\n{deny, all}.\n{allow, all, pubsub, ["#"]}.')
    expect(acl.decide(client('1.1.1.1', 'u'), 'publish', 't')).toBe('allow')
    expect(acl.decide(client('1.1.1.1', 'u'), 'publish', 'x')).toBe('deny')
  })
})

describe('acl_nomatch', () => {
  const text = '{allow, {user, "u"}, publish, ["t"]}.'
  it.each([['allow'], ['deny']] as const)('decides with %s when no rule matches', (nomatch) => {
    const acl = ruleSet(text, nomatch)
    expect(acl.decide(client('1.1.1.1', 'u'), 'publish', 't')).toBe('allow')
    expect(acl.decide(client('1.1.1.1', 'v'), 'publish', 't')).toBe(nomatch)
    expect(acl.decide(client('1.1.1.1', 'u'), 'subscribe', 't')).toBe(nomatch)
  })

  it('an empty file decides everything with acl_nomatch', () => {
    expect(ruleSet('', 'deny').decide(LOCAL, 'publish', 't')).toBe('deny')
  })
})

describe('who', () => {
  const acl = ruleSet([
    '{allow, {client, "c-9"}, publish, ["w/client"]}.',
    '{allow, {ipaddr, "192.168.0.0/24"}, publish, ["w/cidr"]}.',
    '{allow, {ipaddr, "fd00::/8"}, publish, ["w/cidr6"]}.',
    '{allow, {ipaddrs, ["10.0.0.1", "10.0.0.2"]}, publish, ["w/ips"]}.',
    "{allow, {'and', [{user, \"u\"}, {ipaddr, \"10.0.0.0/8\"}]}, publish, [\"w/and\"]}.",
    "{allow, {'or', [{user, \"u\"}, {client, \"c-9\"}]}, publish, [\"w/or\"]}.",
    '{allow, {user, all}, publish, ["w/anyuser"]}.'
  ].join('\n'), 'deny')
  it.each<Case>([
    ['client id', client('1.1.1.1', undefined, 'c-9'), 'publish', 'w/client', 'allow'],
    ['other client id', client('1.1.1.1', undefined, 'c-8'), 'publish', 'w/client', 'deny'],
    ['inside the CIDR', client('192.168.0.200'), 'publish', 'w/cidr', 'allow'],
    ['outside the CIDR', client('192.168.1.1'), 'publish', 'w/cidr', 'deny'],
    ['inside the IPv6 CIDR', client('fd12:3456::1'), 'publish', 'w/cidr6', 'allow'],
    ['outside the IPv6 CIDR', client('fe80::1'), 'publish', 'w/cidr6', 'deny'],
    ['IPv4 client against an IPv6 block', client('10.0.0.1'), 'publish', 'w/cidr6', 'deny'],
    ['one of ipaddrs', client('10.0.0.2'), 'publish', 'w/ips', 'allow'],
    ['none of ipaddrs', client('10.0.0.3'), 'publish', 'w/ips', 'deny'],
    ['no peer address', client(''), 'publish', 'w/cidr', 'deny'],
    ['and: both', client('10.9.9.9', 'u'), 'publish', 'w/and', 'allow'],
    ['and: one', client('11.9.9.9', 'u'), 'publish', 'w/and', 'deny'],
    ['or: user', client('1.1.1.1', 'u'), 'publish', 'w/or', 'allow'],
    ['or: client', client('1.1.1.1', undefined, 'c-9'), 'publish', 'w/or', 'allow'],
    ['or: neither', client('1.1.1.1', 'v'), 'publish', 'w/or', 'deny'],
    ['{user, all} with a username', client('1.1.1.1', 'x'), 'publish', 'w/anyuser', 'allow']
  ])('%s', (_what, who, action, topic, expected) => {
    expect(acl.decide(who, action, topic)).toBe(expected)
  })
})

describe('topics', () => {
  const acl = ruleSet([
    '{allow, all, publish, ["users/%u/#"]}.',
    '{allow, all, publish, ["clients/%c"]}.',
    '{allow, all, subscribe, [{eq, "eq/+"}, "sensors/+/temp"]}.',
    '{allow, all, publish, [{eq, "lit/%u"}]}.'
  ].join('\n'), 'deny')
  it.each<Case>([
    ['%u is the username', client('1.1.1.1', 'alice'), 'publish', 'users/alice/x', 'allow'],
    ['%u is not another username', client('1.1.1.1', 'alice'), 'publish', 'users/bob/x', 'deny'],
    ['%u never matches a client without a username', client('1.1.1.1'), 'publish', 'users/%u/x', 'deny'],
    ['%c is the client id', client('1.1.1.1', undefined, 'dev-1'), 'publish', 'clients/dev-1', 'allow'],
    ['%c is not another client id', client('1.1.1.1', undefined, 'dev-1'), 'publish', 'clients/dev-2', 'deny'],
    ['{eq, T} matches T itself', REMOTE, 'subscribe', 'eq/+', 'allow'],
    ['{eq, T} has no wildcards', REMOTE, 'subscribe', 'eq/a', 'deny'],
    ['a filter matches a narrower subscription', REMOTE, 'subscribe', 'sensors/+/temp', 'allow'],
    ['a filter matches a subscribed topic', REMOTE, 'subscribe', 'sensors/kitchen/temp', 'allow'],
    ['a filter does not match a wider subscription', REMOTE, 'subscribe', 'sensors/#', 'deny'],
    ['placeholders in {eq, T} are literal', client('1.1.1.1', 'alice'), 'publish', 'lit/%u', 'allow'],
    ['placeholders in {eq, T} are not substituted', client('1.1.1.1', 'alice'), 'publish', 'lit/alice', 'deny']
  ])('%s', (_what, who, action, topic, expected) => {
    expect(acl.decide(who, action, topic)).toBe(expected)
  })

  it('a username or client id that is a wildcard level does not act as one', () => {
    const own = ruleSet([
      '{allow, all, subscribe, ["users/%u/#"]}.',
      '{allow, all, subscribe, ["clients/%c/+"]}.'
    ].join('\n'), 'deny')
    // the client named `#` would otherwise subscribe to every user's topics
    expect(own.decide(client('1.1.1.1', '#'), 'subscribe', 'users/#')).toBe('deny')
    expect(own.decide(client('1.1.1.1', '+'), 'subscribe', 'users/+/x')).toBe('deny')
    expect(own.decide(client('1.1.1.1', undefined, '+'), 'subscribe', 'clients/+/x')).toBe('deny')
    expect(own.decide(client('1.1.1.1', 'alice'), 'subscribe', 'users/alice/#')).toBe('allow')
  })

  it('a wildcard first level does not match $ topics [MQTT-4.7.2-1]', () => {
    const wild = ruleSet('{deny, all, pubsub, ["#", "+/x"]}.', 'allow')
    expect(wild.decide(REMOTE, 'publish', '$SYS/a')).toBe('allow')
    expect(wild.decide(REMOTE, 'publish', '$x/x')).toBe('allow')
    expect(wild.decide(REMOTE, 'publish', 'a/x')).toBe('deny')
  })
})
