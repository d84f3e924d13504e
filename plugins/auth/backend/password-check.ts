/**
 * Password checks for external auth backends (MySQL, PostgreSQL, Redis, MongoDB), with
 * EMQ X 4.4's `emqx_passwd` hashes and its `auth.<backend>.password_hash` syntax:
 *
 * | value | stored value is |
 * |---|---|
 * | `plain` | the password itself |
 * | `md5`, `sha` (SHA-1), `sha256`, `sha512` | lower-case hex digest of the password |
 * | `bcrypt` | a bcrypt string `$2a$`/`$2b$`/`$2y$`; its salt is its first 29 characters |
 * | `salt,<h>` | `<h>` of salt ‖ password (`<h>` = `bcrypt`: bcrypt with the salt column as its salt) |
 * | `<h>,salt` | `<h>` of password ‖ salt (`bcrypt,salt` is the same as `salt,bcrypt`) |
 * | `pbkdf2,<macfun>,<iterations>,<dklen>` | lower-case hex of PBKDF2-HMAC-`<macfun>` with the salt column as salt, `<dklen>` bytes |
 *
 * The salt is the text of the backend's salt column, used as its UTF-8 bytes (not hex
 * decoded: that is the built-in tables' format, `plugins/auth/password-hash.ts`).
 *
 * Invariants:
 * - Comparisons are constant-time: both sides are hashed to 32 bytes (SHA-256) and compared
 *   with `timingSafeEqual`, so neither the contents nor the stored length leak.
 * - A missing password, a salted hash without a salt and a malformed bcrypt salt never match.
 * - A stored hex digest matches in either case (EMQ X compared it exactly, so only lower case
 *   matched); everything else is compared byte for byte.
 * - A value `password_hash` does not describe is refused when the plugin loads (EMQ X
 *   silently fell back to `plain`).
 */
import { createHash, pbkdf2, pbkdf2Sync } from 'node:crypto'
import { promisify } from 'node:util'
import bcrypt from 'bcryptjs'
import { ConfigError } from '../../../node/config/index.js'
import { constantTimeEqual } from '../password-hash.js'

/** The hash names of `password_hash`, as EMQ X spelled them (`sha` is SHA-1). */
export const BACKEND_HASHES = ['plain', 'md5', 'sha', 'sha256', 'sha512', 'bcrypt'] as const

/** One of {@link BACKEND_HASHES}. */
export type BackendHashName = typeof BACKEND_HASHES[number]

/** PBKDF2 MAC functions by EMQ X's names; `md4` and `ripemd160` only where Node's OpenSSL has them. */
export const PBKDF2_MACFUNS = ['md4', 'md5', 'sha', 'sha224', 'sha256', 'sha384', 'sha512', 'ripemd160'] as const

/** One of {@link PBKDF2_MACFUNS}. */
export type Pbkdf2Macfun = typeof PBKDF2_MACFUNS[number]

/** Iterations and derived-key bytes accepted for pbkdf2 (a check runs it once per CONNECT). */
export const PBKDF2_MAX_ITERATIONS = 10_000_000
export const PBKDF2_MAX_DKLEN = 1024

/** A parsed `password_hash`. `salt-first` is `salt,<h>`, `salt-last` is `<h>,salt`. */
export type PasswordHashSpec =
  | { readonly kind: 'unsalted' | 'salt-first' | 'salt-last', readonly hash: BackendHashName }
  | { readonly kind: 'pbkdf2', readonly macfun: Pbkdf2Macfun, readonly iterations: number, readonly dklen: number }

/** Checks a client's password against what a backend stores, for one `password_hash`. */
export interface PasswordChecker {
  readonly spec: PasswordHashSpec
  /** The spec in `password_hash` syntax (`salt,sha256`). */
  readonly name: string
  /** Whether entries need a salt (a second column or field). */
  readonly needsSalt: boolean
  /**
   * Whether `given` matches `stored` (with `salt` from the backend, undefined when it has
   * none). Synchronous: bcrypt and pbkdf2 block the event loop while they run; prefer
   * {@link checkAsync} on a broker's connection path.
   */
  check: (stored: string, salt: string | undefined, given: Buffer | undefined) => boolean
  /** As {@link check}, with bcrypt and pbkdf2 computed off the event loop's critical path. */
  checkAsync: (stored: string, salt: string | undefined, given: Buffer | undefined) => Promise<boolean>
}

const NODE_DIGESTS: Readonly<Record<Pbkdf2Macfun, string>> = {
  md4: 'md4', md5: 'md5', sha: 'sha1', sha224: 'sha224', sha256: 'sha256', sha384: 'sha384', sha512: 'sha512', ripemd160: 'ripemd160'
}

const ALLOWED = 'plain, md5, sha, sha256, sha512 or bcrypt; salt,<hash> or <hash>,salt (salt,sha256); ' +
  'or pbkdf2,<macfun>,<iterations>,<dklen> (pbkdf2,sha256,1000,20)'

/**
 * Parses a `password_hash` value (spaces around commas are allowed). Anything else is a
 * {@link ConfigError} naming `key`, as is a pbkdf2 MAC function this Node.js lacks.
 */
export function parsePasswordHash (value: string, key: string, source = 'plugin config'): PasswordChecker {
  const bad = (allowed = ALLOWED): never => { throw ConfigError.badValue(key, value, allowed, source) }
  const tokens = String(value).split(',').map((t) => t.trim())
  const isHash = (t: string | undefined): t is BackendHashName => (BACKEND_HASHES as readonly string[]).includes(t ?? '')
  let spec: PasswordHashSpec
  if (tokens.length === 1 && isHash(tokens[0])) spec = { kind: 'unsalted', hash: tokens[0] }
  else if (tokens.length === 2 && tokens[0] === 'salt' && isHash(tokens[1])) spec = { kind: 'salt-first', hash: tokens[1] }
  else if (tokens.length === 2 && tokens[1] === 'salt' && isHash(tokens[0])) spec = { kind: 'salt-last', hash: tokens[0] }
  else if (tokens.length === 4 && tokens[0] === 'pbkdf2') {
    const [, macfun, iterations, dklen] = tokens
    const usable = PBKDF2_MACFUNS.filter(nodeSupports)
    if (!(usable as string[]).includes(macfun)) bad(`a pbkdf2 MAC function this node supports: ${usable.join(', ')}`)
    if (!isCount(iterations, PBKDF2_MAX_ITERATIONS)) bad(`pbkdf2 iterations from 1 to ${PBKDF2_MAX_ITERATIONS}`)
    if (!isCount(dklen, PBKDF2_MAX_DKLEN)) bad(`a pbkdf2 derived key length from 1 to ${PBKDF2_MAX_DKLEN} bytes`)
    spec = { kind: 'pbkdf2', macfun: macfun as Pbkdf2Macfun, iterations: Number(iterations), dklen: Number(dklen) }
  } else return bad()
  return createPasswordChecker(spec)
}

/** A checker for `spec`; see the module comment for what each kind stores. */
export function createPasswordChecker (spec: PasswordHashSpec): PasswordChecker {
  const hexOutput = spec.kind === 'pbkdf2' || (spec.hash !== 'plain' && spec.hash !== 'bcrypt')
  const expected = (stored: string): Buffer => Buffer.from(hexOutput ? stored.toLowerCase() : stored, 'utf8')
  const compare = (stored: string, computed: Buffer | string | undefined): boolean =>
    computed !== undefined && constantTimeEqual(expected(stored), typeof computed === 'string' ? Buffer.from(computed, 'utf8') : computed)
  const bcryptSalt = (stored: string, salt: string | undefined): string | undefined =>
    spec.kind === 'unsalted' ? stored.slice(0, 29) : salt
  return {
    spec,
    name: formatPasswordHash(spec),
    needsSalt: spec.kind !== 'unsalted',
    check: (stored, salt, given) => {
      if (given === undefined) return false
      const s = spec.kind !== 'pbkdf2' && spec.hash === 'bcrypt' ? bcryptSalt(stored, salt) : salt
      return compare(stored, computeBytes(spec, given, s))
    },
    checkAsync: async (stored, salt, given) => {
      if (given === undefined) return false
      if (spec.kind === 'pbkdf2') {
        if (salt === undefined) return false
        const key = await pbkdf2Async(given, Buffer.from(salt, 'utf8'), spec.iterations, spec.dklen, NODE_DIGESTS[spec.macfun])
        return compare(stored, key.toString('hex'))
      }
      if (spec.hash === 'bcrypt') {
        const s = bcryptSalt(stored, salt)
        if (s === undefined) return false
        return compare(stored, await bcrypt.hash(given.toString('utf8'), s).catch(() => undefined))
      }
      return compare(stored, computeBytes(spec, given, salt))
    }
  }
}

/**
 * What EMQ X 4.4 would store for `password` under `spec`: the string a backend's password
 * column must hold. `salt` is the salt column's text; for unsalted `bcrypt` it is the
 * bcrypt salt (`$2b$10$` + 22 characters). Undefined when a needed salt is missing or the
 * bcrypt salt is malformed.
 */
export function computePasswordHash (spec: PasswordHashSpec, password: Buffer, salt: string | undefined): string | undefined {
  return computeBytes(spec, password, salt)?.toString('utf8')
}

/** {@link computePasswordHash} as bytes: `plain` keeps the password's bytes exactly, UTF-8 or not. */
function computeBytes (spec: PasswordHashSpec, password: Buffer, salt: string | undefined): Buffer | undefined {
  if (spec.kind === 'pbkdf2') {
    if (salt === undefined) return undefined
    return Buffer.from(pbkdf2Sync(password, Buffer.from(salt, 'utf8'), spec.iterations, spec.dklen, NODE_DIGESTS[spec.macfun]).toString('hex'))
  }
  if (spec.hash === 'bcrypt') {
    if (salt === undefined) return undefined
    try {
      return Buffer.from(bcrypt.hashSync(password.toString('utf8'), salt))
    } catch {
      return undefined // a malformed salt: EMQ X's incorrect_hash
    }
  }
  let bytes = password
  if (spec.kind !== 'unsalted') {
    if (salt === undefined) return undefined
    const saltBytes = Buffer.from(salt, 'utf8')
    bytes = spec.kind === 'salt-first' ? Buffer.concat([saltBytes, password]) : Buffer.concat([password, saltBytes])
  }
  if (spec.hash === 'plain') return bytes
  return Buffer.from(createHash(spec.hash === 'sha' ? 'sha1' : spec.hash).update(bytes).digest('hex'))
}

/** `spec` in `password_hash` syntax: `sha256`, `salt,sha256`, `sha256,salt`, `pbkdf2,sha256,1000,20`. */
export function formatPasswordHash (spec: PasswordHashSpec): string {
  switch (spec.kind) {
    case 'unsalted': return spec.hash
    case 'salt-first': return `salt,${spec.hash}`
    case 'salt-last': return `${spec.hash},salt`
    case 'pbkdf2': return `pbkdf2,${spec.macfun},${spec.iterations},${spec.dklen}`
  }
}

const pbkdf2Async = promisify(pbkdf2)

/** Whether `text` is a decimal integer from 1 to `max`. */
function isCount (text: string, max: number): boolean {
  return /^[0-9]{1,9}$/.test(text) && Number(text) >= 1 && Number(text) <= max
}

/** Whether this Node's OpenSSL computes HMAC with `macfun` (OpenSSL 3 dropped MD4 by default). */
function nodeSupports (macfun: Pbkdf2Macfun): boolean {
  try {
    pbkdf2Sync('', '', 1, 1, NODE_DIGESTS[macfun])
    return true
  } catch {
    return false
  }
}
