/** The per-client ACL cache: keys, size limit, time to live, takeover, drop and clear. */
import { AclCache } from '../../../node/acl/index.js'
import type { AccessClient } from '../../../node/mqtt/broker.js'

const alice: AccessClient = { clientId: 'c1', username: 'alice', peerhost: '10.0.0.1' }

describe('AclCache', () => {
  let now = 1_000
  const cache = (maxSize = 3, ttlMs = 60_000): AclCache => new AclCache({ maxSize, ttlMs, now: () => now })
  beforeEach(() => { now = 1_000 })

  it('keeps decisions by action and topic', () => {
    const c = cache()
    c.set(alice, 'publish', 't', 'deny')
    c.set(alice, 'subscribe', 't', 'allow')
    expect(c.get(alice, 'publish', 't')).toBe('deny')
    expect(c.get(alice, 'subscribe', 't')).toBe('allow')
    expect(c.get(alice, 'publish', 'u')).toBeUndefined()
    expect(c.get({ ...alice, clientId: 'c2' }, 'publish', 't')).toBeUndefined()
  })

  it('uses an entry until acl_cache_ttl has passed', () => {
    const c = cache(3, 60_000)
    c.set(alice, 'publish', 't', 'allow')
    now += 59_999
    expect(c.get(alice, 'publish', 't')).toBe('allow')
    now += 1
    expect(c.get(alice, 'publish', 't')).toBeUndefined()
    expect(c.size('c1')).toBe(0)
  })

  it('holds at most acl_cache_max_size entries per client, dropping the oldest', () => {
    const c = cache(3)
    for (const t of ['a', 'b', 'c', 'd']) c.set(alice, 'publish', t, 'allow')
    expect(c.size('c1')).toBe(3)
    expect(c.get(alice, 'publish', 'a')).toBeUndefined()
    expect(c.get(alice, 'publish', 'd')).toBe('allow')
  })

  it('does not reuse decisions for another user or address under the same client id', () => {
    const c = cache()
    c.set(alice, 'publish', 't', 'allow')
    expect(c.get({ ...alice, username: 'mallory' }, 'publish', 't')).toBeUndefined()
    c.set(alice, 'publish', 't', 'allow')
    expect(c.get({ ...alice, peerhost: '10.0.0.2' }, 'publish', 't')).toBeUndefined()
  })

  it('forgets a client on drop and everyone on clear', () => {
    const c = cache()
    const bob = { ...alice, clientId: 'c2', username: 'bob' }
    c.set(alice, 'publish', 't', 'allow')
    c.set(bob, 'publish', 't', 'allow')
    c.drop('c1')
    expect(c.size('c1')).toBe(0)
    expect(c.size('c2')).toBe(1)
    c.clear()
    expect(c.size('c2')).toBe(0)
  })
})
