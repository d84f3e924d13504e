/**
 * The stored-password check of `svc_auth_ldap` (search-then-compare mode): the RFC 2307
 * `{SCHEME}base64` values OpenLDAP keeps in `userPassword`, read as EMQ X 4.4's
 * emqx_auth_ldap read them.
 *
 * - `{MD5}`, `{SHA}`, `{SHA256}`, `{SHA384}`, `{SHA512}` (and `{SHA224}`): base64 of the
 *   digest of the password; `{SSHA}`: base64 of SHA-1(password + salt) followed by the salt.
 *   `{SSHA256}`, `{SSHA512}` (OpenLDAP's pw-sha2 module) likewise, beyond EMQ X.
 * - The scheme is matched case-insensitively. A value with no `{SCHEME}` is base64-decoded
 *   once and read again (a directory returning the LDIF `::` form as text), as EMQ X did.
 * - Anything else (no scheme, `{CRYPT}`, an unknown scheme) never matches: a clear-text
 *   `userPassword` is refused, as in EMQ X 4.4, whose check had no clear-text case.
 *
 * Invariant: the comparison is constant-time over the digest bytes.
 */
import { createHash, timingSafeEqual } from 'node:crypto'

/** Unsalted schemes and their digest. */
const DIGESTS: Readonly<Record<string, string>> = { md5: 'md5', sha: 'sha1', sha224: 'sha224', sha256: 'sha256', sha384: 'sha384', sha512: 'sha512' }
/** Salted schemes, their digest and its length in bytes. */
const SALTED: Readonly<Record<string, { digest: string, length: number }>> = {
  ssha: { digest: 'sha1', length: 20 },
  ssha256: { digest: 'sha256', length: 32 },
  ssha512: { digest: 'sha512', length: 64 }
}

/** The `{SCHEME}` and what follows it, or undefined when `value` has none. */
function splitScheme (value: string): { scheme: string, rest: string } | undefined {
  const match = /^\s*\{([^{}]+)\}([^{}]*)$/.exec(value)
  return match === null ? undefined : { scheme: match[1].toLowerCase(), rest: match[2].trim() }
}

/** Whether `given` (the CONNECT password) matches the directory's stored `userPassword`. */
export function checkLdapPassword (stored: string | Buffer, given: Buffer | string): boolean {
  const text = Buffer.isBuffer(stored) ? stored.toString('latin1') : stored
  const parsed = splitScheme(text) ?? splitScheme(Buffer.from(text, 'base64').toString('latin1'))
  if (parsed === undefined) return false
  const password = Buffer.isBuffer(given) ? given : Buffer.from(given, 'utf8')
  const digest = DIGESTS[parsed.scheme]
  if (digest !== undefined) {
    const expected = Buffer.from(parsed.rest, 'base64')
    return constantTimeEqual(expected, createHash(digest).update(password).digest())
  }
  const salted = SALTED[parsed.scheme]
  if (salted !== undefined) {
    const decoded = Buffer.from(parsed.rest, 'base64')
    if (decoded.length <= salted.length) return false
    const hash = decoded.subarray(0, salted.length)
    const salt = decoded.subarray(salted.length)
    return constantTimeEqual(hash, createHash(salted.digest).update(password).update(salt).digest())
  }
  return false
}

/** `{SCHEME}base64` for `password`: what a test or an operator stores (`salt` only for salted schemes). */
export function formatLdapPassword (scheme: string, password: string, salt: Buffer = Buffer.alloc(0)): string {
  const lower = scheme.toLowerCase()
  const salted = SALTED[lower]
  if (salted !== undefined) {
    const hash = createHash(salted.digest).update(password).update(salt).digest()
    return `{${scheme.toUpperCase()}}${Buffer.concat([hash, salt]).toString('base64')}`
  }
  const digest = DIGESTS[lower]
  if (digest === undefined) throw new Error(`unknown LDAP password scheme ${scheme}`)
  return `{${scheme.toUpperCase()}}${createHash(digest).update(password).digest('base64')}`
}

function constantTimeEqual (a: Buffer, b: Buffer): boolean {
  return a.length === b.length && a.length > 0 && timingSafeEqual(a, b)
}
