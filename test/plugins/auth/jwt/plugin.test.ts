/**
 * svc_auth_jwt's pieces without a node: the claims store (a takeover's late disconnect never
 * drops the new connection's claims) and the shipped etc/plugins/svc_auth_jwt.conf.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadPluginConfig, parseConfText } from '../../../../node/config/index.js'
import { JwtClaimsStore } from '../../../../plugins/auth/jwt/claims-store.js'
import { svcAuthJwt } from '../../../../plugins/auth/jwt/plugin.js'
import { PROJECT_ROOT } from '../../../helpers/process.js'

describe('JwtClaimsStore', () => {
  it('gives the claims to the same client id and username only', () => {
    const store = new JwtClaimsStore()
    store.set('c1', 'alice', { acl: {} }, 1000)
    expect(store.forAcl('c1', 'alice')).toEqual({ acl: {} })
    expect(store.forAcl('c1', 'bob')).toBeUndefined()
    expect(store.forAcl('c1', undefined)).toBeUndefined()
    expect(store.forAcl('c2', 'alice')).toBeUndefined()
  })

  it('drops them when the connection that authenticated goes, but not for an older connection taken over', () => {
    const store = new JwtClaimsStore()
    store.set('c1', 'alice', { n: 1 }, 1000) // first connection, connected at 1001
    store.set('c1', 'alice', { n: 2 }, 2000) // takeover: authenticated at 2000, connected at 2001
    store.disconnected('c1', 1001) // the old connection's event arrives late
    expect(store.forAcl('c1', 'alice')).toEqual({ n: 2 })
    store.disconnected('c1', 2001)
    expect(store.forAcl('c1', 'alice')).toBeUndefined()
    expect(store.size).toBe(0)
  })

  it('drops a client id\'s claims when its CONNECT was not allowed by the plugin', () => {
    const store = new JwtClaimsStore()
    store.set('c1', 'alice', { n: 1 })
    store.drop('c1')
    expect(store.forAcl('c1', 'alice')).toBeUndefined()
  })
})

describe('the shipped etc/plugins/svc_auth_jwt.conf', () => {
  const file = join(PROJECT_ROOT, 'etc/plugins/svc_auth_jwt.conf')
  it('sets every fixed key of the schema and loads as the defaults', () => {
    const schema = svcAuthJwt.configSchema
    const keys = parseConfText(readFileSync(file, 'utf8'), file).map(e => e.key)
    expect(keys.sort()).toEqual(Object.keys(schema).filter(k => !k.includes('<name>')).sort())
    const shipped = loadPluginConfig(file, schema, { env: {} })
    const defaults = loadPluginConfig(join(PROJECT_ROOT, 'etc/plugins/does-not-exist.conf'), schema, { env: {}, optional: true })
    expect(shipped).toEqual(defaults)
    expect(shipped['auth.jwt.jwks.refresh_interval']).toBe(5 * 60 * 1000)
    expect(shipped['auth.jwt.from']).toBe('password')
  })
})
