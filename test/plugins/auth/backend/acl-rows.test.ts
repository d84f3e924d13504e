import {
  AclRowError, compileAclRows, decideAclRows, decideJwtAcl, decideRedisAcl, type AclClient, type AclRow
} from '../../../../plugins/auth/backend/acl-rows.js'

const ALICE: AclClient = { clientId: 'c-alice', username: 'alice', peerhost: '10.0.0.7' }
const BOB: AclClient = { clientId: 'c-bob', username: 'bob', peerhost: '192.168.1.20' }
const ANON: AclClient = { clientId: 'c-anon', peerhost: '10.0.0.8' }

/** A row with only what a test cares about; NULL elsewhere, as the table's defaults. */
const row = (r: Partial<AclRow>): AclRow => ({ allow: 1, ipaddr: null, username: null, clientid: null, access: 3, topic: '#', ...r })

describe('SQL ACL rows (emqx_acl_mysql / emqx_acl_pgsql)', () => {
  it('ignores when there are no rows or none matches', () => {
    expect(decideAclRows([], ALICE, 'publish', 't')).toBe('ignore')
    expect(decideAclRows([row({ username: 'bob', topic: 't' })], ALICE, 'publish', 't')).toBe('ignore')
    expect(decideAclRows([row({ username: '$all', topic: 'other' })], ALICE, 'publish', 't')).toBe('ignore')
  })

  it('applies a $all row to everyone, with or without a username', () => {
    const rows = [row({ allow: 0, username: '$all', topic: 'secret/#' })]
    for (const client of [ALICE, BOB, ANON]) expect(decideAclRows(rows, client, 'publish', 'secret/x')).toBe('deny')
  })

  it('$all wins over the row\'s other columns, as in EMQ X', () => {
    expect(decideAclRows([row({ username: '$all', clientid: 'someone-else', topic: 't' })], ALICE, 'publish', 't')).toBe('allow')
  })

  it('ANDs the non-empty ipaddr, username and clientid columns', () => {
    const rows = [row({ ipaddr: '10.0.0.7', username: 'alice', clientid: 'c-alice', topic: 't' })]
    expect(decideAclRows(rows, ALICE, 'publish', 't')).toBe('allow')
    expect(decideAclRows(rows, { ...ALICE, peerhost: '10.0.0.9' }, 'publish', 't')).toBe('ignore')
    expect(decideAclRows(rows, { ...ALICE, clientId: 'other' }, 'publish', 't')).toBe('ignore')
    expect(decideAclRows(rows, { ...ALICE, username: 'bob' }, 'publish', 't')).toBe('ignore')
    // empty strings are as NULL: only the username counts here
    expect(decideAclRows([row({ ipaddr: '', username: 'alice', clientid: '', topic: 't' })], { ...ALICE, peerhost: '1.1.1.1' }, 'publish', 't')).toBe('allow')
  })

  it('matches ipaddr as an address or CIDR block, IPv4-mapped peers included', () => {
    const rows = [row({ ipaddr: '10.0.0.0/8', topic: 't' })]
    expect(decideAclRows(rows, ALICE, 'publish', 't')).toBe('allow')
    expect(decideAclRows(rows, { ...ALICE, peerhost: '::ffff:10.1.2.3' }, 'publish', 't')).toBe('allow')
    expect(decideAclRows(rows, BOB, 'publish', 't')).toBe('ignore')
  })

  it('filters by access: 1 subscribe, 2 publish, 3 both', () => {
    const sub = [row({ username: '$all', access: 1, topic: 't' })]
    const pub = [row({ username: '$all', access: 2, topic: 't' })]
    const both = [row({ username: '$all', access: 3, topic: 't' })]
    expect([decideAclRows(sub, ALICE, 'subscribe', 't'), decideAclRows(sub, ALICE, 'publish', 't')]).toEqual(['allow', 'ignore'])
    expect([decideAclRows(pub, ALICE, 'subscribe', 't'), decideAclRows(pub, ALICE, 'publish', 't')]).toEqual(['ignore', 'allow'])
    expect([decideAclRows(both, ALICE, 'subscribe', 't'), decideAclRows(both, ALICE, 'publish', 't')]).toEqual(['allow', 'allow'])
  })

  it('takes the first matching row, in the order given', () => {
    const denyFirst = [row({ allow: 0, username: 'alice', topic: 'a/#' }), row({ allow: 1, username: '$all', topic: 'a/b' })]
    expect(decideAclRows(denyFirst, ALICE, 'publish', 'a/b')).toBe('deny')
    expect(decideAclRows([...denyFirst].reverse(), ALICE, 'publish', 'a/b')).toBe('allow')
    // a row for another action does not stop the search
    const mixed = [row({ allow: 0, username: '$all', access: 1, topic: 'a/b' }), row({ allow: 1, username: '$all', access: 2, topic: 'a/b' })]
    expect(decideAclRows(mixed, ALICE, 'publish', 'a/b')).toBe('allow')
  })

  it('reads eq T as exactly T: eq # refuses the filter # but not a/#', () => {
    const rows = [row({ allow: 0, username: '$all', access: 1, topic: 'eq #' }), row({ username: '$all', access: 1, topic: '#' })]
    expect(decideAclRows(rows, ALICE, 'subscribe', '#')).toBe('deny')
    expect(decideAclRows(rows, ALICE, 'subscribe', 'a/#')).toBe('allow')
    expect(decideAclRows([row({ username: '$all', topic: 'eq a/+' })], ALICE, 'subscribe', 'a/+')).toBe('allow')
    expect(decideAclRows([row({ username: '$all', topic: 'eq a/+' })], ALICE, 'publish', 'a/x')).toBe('ignore')
  })

  it('substitutes %u and %c levels with the client\'s own, literally', () => {
    const rows = [row({ username: '$all', topic: 'users/%u/#' }), row({ username: '$all', topic: 'clients/%c' })]
    expect(decideAclRows(rows, ALICE, 'publish', 'users/alice/x')).toBe('allow')
    expect(decideAclRows(rows, ALICE, 'publish', 'users/bob/x')).toBe('ignore')
    expect(decideAclRows(rows, ALICE, 'publish', 'clients/c-alice')).toBe('allow')
    expect(decideAclRows(rows, ALICE, 'publish', 'clients/c-bob')).toBe('ignore')
    // no username: a %u level never matches; a username "+" or "#" is no wildcard
    expect(decideAclRows(rows, ANON, 'publish', 'users/%u/x')).toBe('ignore')
    expect(decideAclRows(rows, { ...ALICE, username: '+' }, 'publish', 'users/bob/x')).toBe('ignore')
    expect(decideAclRows(rows, { ...ALICE, username: '#' }, 'subscribe', 'users/#')).toBe('ignore')
  })

  it('decides a subscribe on its filter: the rule filter must cover it', () => {
    const rows = [row({ username: '$all', access: 1, topic: 'sensors/#' })]
    expect(decideAclRows(rows, ALICE, 'subscribe', 'sensors/+/temp')).toBe('allow')
    expect(decideAclRows(rows, ALICE, 'subscribe', '#')).toBe('ignore')
    expect(decideAclRows(rows, ALICE, 'subscribe', '$share/g/sensors/1')).toBe('allow')
  })

  it('keeps $ topics out of wildcard-first rules [MQTT-4.7.2-1]', () => {
    expect(decideAclRows([row({ username: '$all', topic: '#' })], ALICE, 'subscribe', '$SYS/brokers')).toBe('ignore')
  })

  it('decides EMQ X\'s seed table (mqtt.sql) in the rows\' order', () => {
    const seed: AclRow[] = [
      { allow: 1, ipaddr: null, username: '$all', clientid: null, access: 2, topic: '#' },
      { allow: 0, ipaddr: null, username: '$all', clientid: null, access: 1, topic: '$SYS/#' },
      { allow: 0, ipaddr: null, username: '$all', clientid: null, access: 1, topic: 'eq #' },
      { allow: 1, ipaddr: '127.0.0.1', username: null, clientid: null, access: 2, topic: '$SYS/#' },
      { allow: 1, ipaddr: '127.0.0.1', username: null, clientid: null, access: 2, topic: '#' },
      { allow: 1, ipaddr: null, username: 'dashboard', clientid: null, access: 1, topic: '$SYS/#' }
    ]
    const local = { clientId: 'l', username: 'dashboard', peerhost: '127.0.0.1' }
    expect(decideAclRows(seed, ALICE, 'publish', 'a/b')).toBe('allow')
    expect(decideAclRows(seed, ALICE, 'subscribe', '#')).toBe('deny')
    expect(decideAclRows(seed, ALICE, 'subscribe', '$SYS/#')).toBe('deny')
    expect(decideAclRows(seed, local, 'publish', '$SYS/x')).toBe('allow')
    // first match wins: row 2 comes before the dashboard's row 6 (EMQ X 4.4 tried row 6 first)
    expect(decideAclRows(seed, local, 'subscribe', '$SYS/brokers')).toBe('deny')
    expect(decideAclRows([...seed].reverse(), local, 'subscribe', '$SYS/brokers')).toBe('allow')
  })

  it('reads allow and access as numbers, text, bigints, booleans or buffers', () => {
    const rows = [row({ allow: '0', username: Buffer.from('alice'), access: 2n, topic: Buffer.from('t') })]
    expect(decideAclRows(rows, ALICE, 'publish', 't')).toBe('deny')
    expect(decideAclRows([row({ allow: true, username: '$all', access: '1', topic: 't' })], ALICE, 'subscribe', 't')).toBe('allow')
    expect(compileAclRows([row({ username: 'alice', access: 3 })], ALICE)[0]).toMatchObject({ permission: 'allow', access: 'pubsub', line: 1 })
  })

  it.each([
    [{ allow: 2 }, /row 1: bad allow "2"/],
    [{ allow: null }, /bad allow NULL/],
    [{ access: 0 }, /bad access "0"/],
    [{ access: 'pub' }, /bad access "pub"/],
    [{ username: null }, /no ipaddr, username or clientid/],
    [{ username: '' }, /no ipaddr, username or clientid/],
    [{ ipaddr: '10.0.0.300' }, /bad ipaddr "10.0.0.300"/],
    [{ topic: 'a/#/b' }, /bad topic "a\/#\/b"/],
    [{ topic: '' }, /bad topic "": empty topic/],
    [{ topic: 'eq ' }, /empty topic/]
  ] as Array<[Partial<AclRow>, RegExp]>)('refuses the whole decision for a malformed row %j', (bad, message) => {
    const rows = [row({ username: 'alice', ...bad })]
    expect(() => decideAclRows(rows, ALICE, 'publish', 't')).toThrow(AclRowError)
    expect(() => decideAclRows(rows, ALICE, 'publish', 't')).toThrow(message)
  })

  it('numbers a malformed row from 1', () => {
    try {
      compileAclRows([row({ username: 'a' }), row({ username: 'b', access: 9 })], ALICE)
      throw new Error('expected AclRowError')
    } catch (err) {
      expect(err).toBeInstanceOf(AclRowError)
      expect((err as AclRowError).row).toBe(2)
      expect((err as AclRowError).code).toBe('STARLING_ACL_ROW_INVALID')
    }
  })
})

describe('Redis ACL hash (HGETALL mqtt_acl:%u)', () => {
  it('ignores an empty hash, allows a match, denies a non-empty hash without one', () => {
    expect(decideRedisAcl({}, ALICE, 'publish', 't')).toBe('ignore')
    expect(decideRedisAcl([], ALICE, 'publish', 't')).toBe('ignore')
    expect(decideRedisAcl({ 't/#': '2' }, ALICE, 'publish', 't/x')).toBe('allow')
    expect(decideRedisAcl({ 't/#': '2' }, ALICE, 'publish', 'u/x')).toBe('deny')
    expect(decideRedisAcl({ 't/#': '2' }, ALICE, 'publish', 'u/x', 'ignore')).toBe('ignore')
  })

  it('reads the access bitmask: 1 subscribe, 2 publish, 3 both', () => {
    const hash = ['s/#', '1', 'p/#', '2', 'b/#', Buffer.from('3')]
    expect(decideRedisAcl(hash, ALICE, 'subscribe', 's/1')).toBe('allow')
    expect(decideRedisAcl(hash, ALICE, 'publish', 's/1')).toBe('deny')
    expect(decideRedisAcl(hash, ALICE, 'publish', 'p/1')).toBe('allow')
    expect(decideRedisAcl(hash, ALICE, 'subscribe', 'p/1')).toBe('deny')
    expect(decideRedisAcl(hash, ALICE, 'subscribe', 'b/1')).toBe('allow')
    expect(decideRedisAcl(hash, ALICE, 'publish', 'b/1')).toBe('allow')
    expect(decideRedisAcl({ 'n/#': 3 }, ALICE, 'publish', 'n/1')).toBe('allow')
  })

  it('substitutes %u and %c, inside levels too, without letting a value widen the filter', () => {
    const hash = { 'users/%u/#': '3', 'dev-%c/up': '2' }
    expect(decideRedisAcl(hash, ALICE, 'publish', 'users/alice/1')).toBe('allow')
    expect(decideRedisAcl(hash, ALICE, 'publish', 'dev-c-alice/up')).toBe('allow')
    expect(decideRedisAcl(hash, ALICE, 'publish', 'dev-c-bob/up')).toBe('deny')
    expect(decideRedisAcl(hash, ANON, 'publish', 'users/%u/1')).toBe('deny')
    expect(decideRedisAcl({ 'in-%u/x': '2' }, ANON, 'publish', 'in-/x')).toBe('deny')
    const sly = { ...ALICE, clientId: 'a/+', username: '#' }
    expect(decideRedisAcl(hash, sly, 'publish', 'dev-a/b/up')).toBe('deny')
    expect(decideRedisAcl(hash, sly, 'publish', 'users/anyone/1')).toBe('deny')
  })

  it('never matches a malformed entry', () => {
    expect(decideRedisAcl({ 't/#': 'pub', 'a/#/b': '3', 'z': '0' }, ALICE, 'publish', 't/1')).toBe('deny')
    expect(decideRedisAcl({ 'a/#/b': '3' }, ALICE, 'publish', 'a/x/b')).toBe('deny')
  })
})

describe('JWT acl claim (auth.jwt.acl_claim_name)', () => {
  const NOW = 1_700_000_000
  const claims = (acl: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> => ({ sub: 'alice', acl, ...extra })

  it('ignores a token without the claim, or no token at all', () => {
    expect(decideJwtAcl(undefined, 'acl', ALICE, 'publish', 't', NOW)).toBe('ignore')
    expect(decideJwtAcl({ sub: 'alice' }, 'acl', ALICE, 'publish', 't', NOW)).toBe('ignore')
  })

  it('allows what pub, sub or all lists, denies the rest', () => {
    const c = claims({ pub: ['up/%u'], sub: ['down/%c/#'], all: ['both/#'] })
    expect(decideJwtAcl(c, 'acl', ALICE, 'publish', 'up/alice', NOW)).toBe('allow')
    expect(decideJwtAcl(c, 'acl', ALICE, 'subscribe', 'up/alice', NOW)).toBe('deny')
    expect(decideJwtAcl(c, 'acl', ALICE, 'subscribe', 'down/c-alice/+', NOW)).toBe('allow')
    expect(decideJwtAcl(c, 'acl', ALICE, 'publish', 'down/c-alice/x', NOW)).toBe('deny')
    expect(decideJwtAcl(c, 'acl', ALICE, 'publish', 'both/1', NOW)).toBe('allow')
    expect(decideJwtAcl(c, 'acl', ALICE, 'subscribe', 'both/#', NOW)).toBe('allow')
    expect(decideJwtAcl(c, 'acl', BOB, 'publish', 'up/alice', NOW)).toBe('deny')
    // a client id that is a wildcard does not widen down/%c/#
    expect(decideJwtAcl(c, 'acl', { ...ALICE, clientId: '#' }, 'subscribe', 'down/#', NOW)).toBe('deny')
    expect(decideJwtAcl(c, 'acl', { ...ALICE, clientId: '+' }, 'subscribe', 'down/+/x', NOW)).toBe('deny')
  })

  it('uses the configured claim name', () => {
    expect(decideJwtAcl({ perms: { pub: ['t'] } }, 'perms', ALICE, 'publish', 't', NOW)).toBe('allow')
    expect(decideJwtAcl({ perms: { pub: ['t'] } }, 'acl', ALICE, 'publish', 't', NOW)).toBe('ignore')
  })

  it('denies once exp has passed, or when exp cannot be read', () => {
    const acl = { all: ['#'] }
    expect(decideJwtAcl(claims(acl, { exp: NOW + 60 }), 'acl', ALICE, 'publish', 't', NOW)).toBe('allow')
    expect(decideJwtAcl(claims(acl, { exp: String(NOW + 60) }), 'acl', ALICE, 'publish', 't', NOW)).toBe('allow')
    expect(decideJwtAcl(claims(acl, { exp: NOW - 1 }), 'acl', ALICE, 'publish', 't', NOW)).toBe('deny')
    expect(decideJwtAcl(claims(acl, { exp: 'soon' }), 'acl', ALICE, 'publish', 't', NOW)).toBe('deny')
    expect(decideJwtAcl(claims(acl, { exp: null }), 'acl', ALICE, 'publish', 't', NOW)).toBe('deny')
  })

  it('denies a claim that is not an object of lists, and skips entries that are not filters', () => {
    expect(decideJwtAcl(claims('everything'), 'acl', ALICE, 'publish', 't', NOW)).toBe('deny')
    expect(decideJwtAcl(claims({ pub: 't' }), 'acl', ALICE, 'publish', 't', NOW)).toBe('deny')
    expect(decideJwtAcl(claims({ pub: [1, 'a/#/b', null, 't'] }), 'acl', ALICE, 'publish', 't', NOW)).toBe('allow')
  })
})
