/**
 * data_to_cassa's CQL template (plugins/backend_cassa/statement.ts on node/template/sql.ts's
 * `cql` dialect) and backend_cassa's config; the real server is test/e2e/data-cassa.test.ts's.
 */
import { cassaRow, cassaSettingsOf, compileCql } from '../../../plugins/backend_cassa/index.js'

describe('data_to_cassa statements', () => {
  it('binds each placeholder as a ? marker, bare or as a whole string literal; values never enter the text', () => {
    const t = compileCql('insert into t_mqtt_msg (msgid, topic, qos, ok, payload, note) values (${id}, \'${topic}\', ${qos}, ${ok}, ${payload}, \'it\'\'s\')')
    expect(t.text).toBe('insert into t_mqtt_msg (msgid, topic, qos, ok, payload, note) values (?, ?, ?, ?, ?, \'it\'\'s\')')
    const w = cassaRow(t, { id: 'm1', topic: "t/'1'", qos: 1, ok: true, payload: { a: 1 } })
    expect(w).toEqual({ text: t.text, rows: [['m1', "t/'1'", 1, true, '{"a":1}']] })
  })

  it('reads a backslash in a string literal as CQL does (no escape), and "..." as an identifier', () => {
    const t = compileCql('insert into "Msgs" (a, b) values (\'C:\\\', ${b})')
    expect(t.text).toBe('insert into "Msgs" (a, b) values (\'C:\\\', ?)')
    expect(t.params).toEqual(['b'])
  })

  it('refuses a placeholder inside a longer literal, a ? of its own and an empty statement (108)', () => {
    expect(() => compileCql('insert into t (a) values (\'id-${id}\')')).toThrow(/parameter sql cannot be used: the placeholder in a string literal/)
    expect(() => compileCql('insert into t (a) values (?)')).toThrow(/a \? marker of its own/)
    expect(() => compileCql('')).toThrow(/it is empty/)
  })

  it('reads nodes, keyspace and the local datacenter', () => {
    expect(cassaSettingsOf({ nodes: 'c1, c2:9043', keyspace: 'mqtt', local_datacenter: 'dc1', username: 'u', password: 'p', pool_size: 2 }))
      .toEqual({ nodes: ['c1:9042', 'c2:9043'], keyspace: 'mqtt', localDataCenter: 'dc1', username: 'u', password: 'p', poolSize: 2, tls: undefined })
    expect(() => cassaSettingsOf({ nodes: 'c1', keyspace: 'a-b', local_datacenter: 'dc1' })).toThrow(/parameter keyspace must name a keyspace/)
    expect(() => cassaSettingsOf({ nodes: 'c1', keyspace: 'k', local_datacenter: '' })).toThrow(/parameter local_datacenter must name the datacenter/)
  })
})
