import {
  parseBannedInput, normaliseIp, BannedParameterMissingError, BannedParameterInvalidError, DEFAULT_BAN_SECONDS
} from '../../../node/banned/banned-entry.js'

const NOW_MS = 1_700_000_000_500
const NOW_S = 1_700_000_000

describe('banned entry input', () => {
  it('fills reason and desc with "", by with "undefined" and until with now + 5 minutes (seconds)', () => {
    expect(parseBannedInput({ who: 'c1', as: 'client_id' }, NOW_MS))
      .toEqual({ who: 'c1', as: 'client_id', reason: '', desc: '', by: 'undefined', until: NOW_S + DEFAULT_BAN_SECONDS })
    expect(DEFAULT_BAN_SECONDS).toBe(300)
  })

  it('keeps every field given, with until as a number or a numeric string', () => {
    const entry = { who: 'u1', as: 'username', reason: 'spam', desc: 'flooding', by: 'ops', until: NOW_S + 60 }
    expect(parseBannedInput(entry, NOW_MS)).toEqual(entry)
    expect(parseBannedInput({ ...entry, until: String(NOW_S + 60) }, NOW_MS)).toEqual(entry)
  })

  it.each([
    ['clientid', 'client_id'], ['peerhost', 'ip_address'], ['client_id', 'client_id'], ['username', 'username'], ['ip_address', 'ip_address']
  ])('accepts as = %s, stored as %s', (as, stored) => {
    expect(parseBannedInput({ who: '10.0.0.1', as }, NOW_MS).as).toBe(stored)
  })

  it('normalises IP addresses: IPv4-mapped IPv6 as IPv4, IPv6 in lower case', () => {
    expect(parseBannedInput({ who: '::FFFF:10.0.0.1', as: 'ip_address' }, NOW_MS).who).toBe('10.0.0.1')
    expect(parseBannedInput({ who: 'FE80::1', as: 'ip_address' }, NOW_MS).who).toBe('fe80::1')
    expect(normaliseIp('::ffff:127.0.0.1')).toBe('127.0.0.1')
    expect(normaliseIp('127.0.0.1')).toBe('127.0.0.1')
  })

  it.each([
    ['who missing', { as: 'client_id' }, 'who'],
    ['who empty', { who: '', as: 'client_id' }, 'who'],
    ['as missing', { who: 'c1' }, 'as']
  ])('refuses %s with code 107', (_case, input, field) => {
    expect(() => parseBannedInput(input, NOW_MS)).toThrow(BannedParameterMissingError)
    expect(() => parseBannedInput(input, NOW_MS)).toThrow(expect.objectContaining({ code: 107, message: expect.stringContaining(`"${field}"`) }))
  })

  it.each([
    ['an unknown as', { who: 'c1', as: 'clientId' }, /"as" must be one of client_id, username, ip_address/],
    ['who not a string', { who: 7, as: 'client_id' }, /"who" must be a string/],
    ['a bad IP address', { who: '10.0.0.300', as: 'ip_address' }, /must be an IP address/],
    ['until not an integer', { who: 'c1', as: 'client_id', until: 'tomorrow' }, /"until" must be an integer timestamp in seconds/],
    ['until fractional', { who: 'c1', as: 'client_id', until: NOW_S + 1.5 }, /"until" must be an integer/],
    ['until in the past', { who: 'c1', as: 'client_id', until: NOW_S }, /not in the future/],
    ['until in milliseconds', { who: 'c1', as: 'client_id', until: NOW_MS + 60_000 }, /not milliseconds/],
    ['reason not a string', { who: 'c1', as: 'client_id', reason: 5 }, /"reason" must be a string/],
    ['a too long who', { who: 'w'.repeat(2000), as: 'username' }, /"who" is too long/]
  ])('refuses %s with code 108', (_case, input, message) => {
    expect(() => parseBannedInput(input as any, NOW_MS)).toThrow(BannedParameterInvalidError)
    expect(() => parseBannedInput(input as any, NOW_MS)).toThrow(message)
  })
})
