import { BACKEND_VERDICTS, isBackendVerdict, parseSuperuser, skipsBackendAcl } from '../../../../plugins/auth/backend/verdict.js'

describe('backend verdicts', () => {
  it('are allow, deny and ignore', () => {
    expect([...BACKEND_VERDICTS]).toEqual(['allow', 'deny', 'ignore'])
    for (const v of BACKEND_VERDICTS) expect(isBackendVerdict(v)).toBe(true)
    for (const v of ['ok', 'Allow', '', null, undefined, 1]) expect(isBackendVerdict(v)).toBe(false)
  })
})

describe('superuser flags', () => {
  it.each([
    ['MySQL TINYINT 1', 1],
    ['MySQL BIGINT 1', 1n],
    ['MySQL text 1', '1'],
    ['MySQL BIT(1)', Buffer.from([1])],
    ['PostgreSQL boolean', true],
    ['Redis "1"', '1'],
    ['Redis "1" as a buffer', Buffer.from('1')],
    ['MongoDB true', true]
  ])('%s is a superuser', (_what, value) => {
    expect(parseSuperuser(value)).toBe(true)
  })

  it.each([
    ['0', 0], ['"0"', '0'], ['false', false], ['NULL', null], ['no row', undefined], ['2', 2], ['"true"', 'true'],
    ['"t"', 't'], ['" 1"', ' 1'], ['"01"', '01'], ['BIT(1) 0', Buffer.from([0])], ['a longer buffer', Buffer.from('11')],
    ['an object', { is_superuser: true }]
  ])('%s is not', (_what, value) => {
    expect(parseSuperuser(value)).toBe(false)
  })
})

describe('usernames the backend ACLs skip', () => {
  it('skips usernames starting with $, and only those', () => {
    expect(skipsBackendAcl('$dashboard')).toBe(true)
    expect(skipsBackendAcl('$')).toBe(true)
    expect(skipsBackendAcl('alice')).toBe(false)
    expect(skipsBackendAcl('a$')).toBe(false)
    expect(skipsBackendAcl('')).toBe(false)
    expect(skipsBackendAcl(undefined)).toBe(false)
  })
})
