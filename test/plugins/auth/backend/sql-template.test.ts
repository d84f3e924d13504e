import { compileSqlTemplate, renderSql, type SqlDialect } from '../../../../plugins/auth/backend/sql-template.js'
import { missingPlaceholders, type AuthContext } from '../../../../plugins/auth/backend/placeholders.js'
import { ConfigError } from '../../../../node/config/index.js'

const AUTH_QUERY = 'select password from mqtt_user where username = \'%u\' limit 1'
const ACL_QUERY = 'select allow, ipaddr, username, clientid, access, topic from mqtt_acl ' +
  'where ipaddr = \'%a\' or username = \'%u\' or username = \'$all\' or clientid = \'%c\''
const CTX: AuthContext = { clientId: 'c1', username: 'alice', peerhost: '10.0.0.7', certCn: 'cn', certDn: 'dn' }

/** Injection payloads a client can put in its username or client id. */
const HOSTILE = [
  '\' OR 1=1 --',
  '\'; DROP TABLE mqtt_user; --',
  'alice\' /*',
  '\\\' OR \'1\'=\'1',
  '$1',
  '?',
  '%u'
]

describe('SQL templates', () => {
  it('binds EMQ X\'s default auth query as one parameter (PostgreSQL)', () => {
    const t = compileSqlTemplate(AUTH_QUERY, 'postgresql')
    expect(t.text).toBe('select password from mqtt_user where username = $1 limit 1')
    expect(renderSql(t, CTX)).toEqual({ text: t.text, values: ['alice'] })
  })

  it('binds EMQ X\'s default ACL query, keeping the \'$all\' literal (MySQL)', () => {
    const t = compileSqlTemplate(ACL_QUERY, 'mysql')
    expect(t.text).toBe('select allow, ipaddr, username, clientid, access, topic from mqtt_acl ' +
      'where ipaddr = ? or username = ? or username = \'$all\' or clientid = ?')
    expect(renderSql(t, CTX).values).toEqual(['10.0.0.7', 'alice', 'c1'])
  })

  it('numbers PostgreSQL parameters in order, one per occurrence', () => {
    const t = compileSqlTemplate('select 1 from t where a = \'%u\' and b = \'%c\' and c = \'%u\'', 'postgresql')
    expect(t.text).toBe('select 1 from t where a = $1 and b = $2 and c = $3')
    expect(t.params).toEqual(['u', 'c', 'u'])
    expect(t.keys).toEqual(['u', 'c'])
    expect(renderSql(t, CTX).values).toEqual(['alice', 'c1', 'alice'])
  })

  it('binds every placeholder, quoted or bare', () => {
    const t = compileSqlTemplate('select %r, \'%P\', %p, \'%C\', \'%d\', %A, \'%t\', %m where x = \'%a\'', 'postgresql')
    expect(t.text).toBe('select $1, $2, $3, $4, $5, $6, $7, $8 where x = $9')
    expect(t.params).toEqual(['r', 'P', 'p', 'C', 'd', 'A', 't', 'm', 'a'])
  })

  describe.each(['postgresql', 'mysql'] as SqlDialect[])('injection attempts (%s)', (dialect) => {
    it.each(HOSTILE)('keeps %j in the values array only', (hostile) => {
      const t = compileSqlTemplate(ACL_QUERY, dialect)
      const query = renderSql(t, { ...CTX, username: hostile, clientId: hostile })
      const [a, u, c] = dialect === 'mysql' ? ['?', '?', '?'] : ['$1', '$2', '$3']
      expect(query.text).toBe('select allow, ipaddr, username, clientid, access, topic from mqtt_acl ' +
        `where ipaddr = ${a} or username = ${u} or username = '$all' or clientid = ${c}`)
      expect(query.values).toEqual(['10.0.0.7', hostile, hostile])
    })
  })

  it('never puts a value into the text, whatever the context', () => {
    const t = compileSqlTemplate(AUTH_QUERY, 'postgresql')
    for (const hostile of HOSTILE) {
      const { text } = renderSql(t, { ...CTX, username: hostile })
      expect(text).toBe('select password from mqtt_user where username = $1 limit 1')
    }
  })

  it('binds NULL for a missing value (EMQ X bound the text "undefined")', () => {
    const t = compileSqlTemplate('select password from mqtt_user where username = \'%u\' or cn = \'%C\'', 'mysql')
    const anonymous: AuthContext = { clientId: 'c1', peerhost: '10.0.0.7' }
    expect(renderSql(t, anonymous).values).toEqual([null, null])
    expect(missingPlaceholders(t, anonymous)).toEqual(['u', 'C'])
  })

  it('leaves placeholders inside longer literals, identifiers and comments as text', () => {
    const sql = 'select "%u", `x` from t -- by %u\nwhere a like \'%u%\' /* %c */ and b = \'%c\''
    const pg = compileSqlTemplate(sql, 'postgresql')
    expect(pg.text).toBe('select "%u", `x` from t -- by %u\nwhere a like \'%u%\' /* %c */ and b = $1')
    expect(pg.params).toEqual(['c'])
    const my = compileSqlTemplate('select `%u` from t # %c\nwhere a = "%u" and b like "x%c"', 'mysql')
    expect(my.text).toBe('select `%u` from t # %c\nwhere a = ? and b like "x%c"')
    expect(my.params).toEqual(['u'])
  })

  it('reads doubled quotes and MySQL backslash escapes inside literals', () => {
    expect(compileSqlTemplate('select \'it\'\'s %u\' , \'%u\'', 'postgresql').text).toBe('select \'it\'\'s %u\' , $1')
    expect(compileSqlTemplate('select \'a\\\' %u\', \'%u\'', 'mysql').text).toBe('select \'a\\\' %u\', ?')
    expect(compileSqlTemplate('select E\'a\\\' %u\', \'%u\'', 'postgresql').text).toBe('select E\'a\\\' %u\', $1')
  })

  it.each([
    ['', 'postgresql'],
    ['select \'%u', 'postgresql'],
    ['select 1 /* open', 'mysql'],
    ['select "x from t', 'postgresql'],
    ['select * from t where username = $1', 'postgresql'],
    ['select * from t where username = ?', 'mysql']
  ] as Array<[string, SqlDialect]>)('refuses %j (%s) with a ConfigError naming the key', (sql, dialect) => {
    expect(() => compileSqlTemplate(sql, dialect, { key: 'auth.pgsql.auth_query', source: 'etc/plugins/svc_auth_pgsql.conf' }))
      .toThrow(ConfigError)
    expect(() => compileSqlTemplate(sql, dialect, { key: 'auth.pgsql.auth_query' })).toThrow(/auth\.pgsql\.auth_query/)
  })

  it('accepts PostgreSQL\'s ? operators and MySQL\'s $ in names', () => {
    expect(compileSqlTemplate('select 1 where tags ? \'%u\'', 'postgresql').text).toBe('select 1 where tags ? $1')
    expect(compileSqlTemplate('select 1 from t$1 where a = \'%u\'', 'mysql').text).toBe('select 1 from t$1 where a = ?')
  })
})
