/**
 * Password hashing for the built-in credential tables (`svc_auth_clientid`,
 * `svc_auth_username`), with EMQ X's hash names: `plain | md5 | sha | sha256 | bcrypt`
 * (`sha` is SHA-1).
 *
 * Storage format (docs/auth.md, "Storage format"), one {@link StoredPassword} per entry:
 * - `md5`, `sha`, `sha256`: `salt` is 16 random bytes as lower-case hex; `password` is the
 *   lower-case hex digest of the salt bytes followed by the password's UTF-8 bytes
 *   (EMQ X 4's salt-first order, with a longer salt than its 4 bytes; entries a data import
 *   brought from EMQ X keep its 4-byte salt, or none for 4.0-4.2's unsalted digests).
 * - `plain`: `salt` is `''`; `password` is the password itself.
 * - `bcrypt`: `salt` is `''` (bcrypt keeps its own salt inside the hash); `password` is the
 *   bcrypt string `$2b$10$...` (cost 10).
 *
 * Invariant: an entry is always verified with the algorithm it was stored with (`hash`),
 * so changing `password_hash` in the config affects new and updated entries only.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import bcrypt from 'bcryptjs'
import { ConfigError } from '../../node/config/index.js'

/** The hash names a credential table accepts, as EMQ X spelled them. */
export const PASSWORD_HASHES = ['plain', 'md5', 'sha', 'sha256', 'bcrypt'] as const

/** One of {@link PASSWORD_HASHES}. */
export type PasswordHashName = typeof PASSWORD_HASHES[number]

/** The default: salted SHA-256, as EMQ X 4's `auth.user.password_hash = sha256`. */
export const DEFAULT_PASSWORD_HASH: PasswordHashName = 'sha256'

/** bcrypt's cost factor (2^10 rounds, about 50-100 ms per hash). */
export const BCRYPT_COST = 10

/** Random salt length in bytes for `md5`, `sha` and `sha256`. */
export const SALT_BYTES = 16

/** How a password is kept in a credential table; see the module comment for each hash. */
export interface StoredPassword {
  /** The algorithm the entry was hashed with. */
  hash: PasswordHashName
  /** Hex salt for `md5`/`sha`/`sha256`; `''` for `plain` and `bcrypt`. */
  salt: string
  /** The digest (hex), the plain password, or the bcrypt string. */
  password: string
}

/** Node's digest names for the salted hashes. */
const DIGESTS: Readonly<Record<'md5' | 'sha' | 'sha256', string>> = { md5: 'md5', sha: 'sha1', sha256: 'sha256' }

/** Whether `name` is one of {@link PASSWORD_HASHES}. */
export function isPasswordHashName (name: unknown): name is PasswordHashName {
  return typeof name === 'string' && (PASSWORD_HASHES as readonly string[]).includes(name)
}

/**
 * `name` as a hash name; anything else is a {@link ConfigError} naming `key` and the
 * accepted values (for configs that did not go through the plugin schema).
 */
export function parsePasswordHashName (name: unknown, key: string, source = 'plugin config'): PasswordHashName {
  if (isPasswordHashName(name)) return name
  throw ConfigError.badValue(key, String(name), `one of ${PASSWORD_HASHES.join(', ')}`, source)
}

/**
 * Hashes `password` with `hash` and a fresh random salt. bcrypt runs asynchronously
 * (bcryptjs yields to the event loop), so it does not stall other clients.
 */
export async function hashPassword (hash: PasswordHashName, password: string): Promise<StoredPassword> {
  switch (hash) {
    case 'plain':
      return { hash, salt: '', password }
    case 'bcrypt':
      return { hash, salt: '', password: await bcrypt.hash(password, BCRYPT_COST) }
    default: {
      const salt = randomBytes(SALT_BYTES).toString('hex')
      return { hash, salt, password: saltedDigest(hash, salt, Buffer.from(password, 'utf8')) }
    }
  }
}

/**
 * Whether `candidate` (the bytes a client sent, or text) matches `stored`. Comparisons take
 * the same time whatever the inputs share: digests and plain passwords are compared as
 * SHA-256 of each side with `timingSafeEqual`, so not even the length leaks; bcryptjs
 * compares in constant time itself. An entry with an unknown `hash` never matches.
 */
export async function verifyPassword (stored: StoredPassword, candidate: Buffer | string): Promise<boolean> {
  const bytes = typeof candidate === 'string' ? Buffer.from(candidate, 'utf8') : candidate
  switch (stored.hash) {
    case 'plain':
      return constantTimeEqual(Buffer.from(stored.password, 'utf8'), bytes)
    case 'bcrypt':
      // bcrypt hashes text: bytes that are not UTF-8 cannot match a password set as text
      return await bcrypt.compare(bytes.toString('utf8'), stored.password)
    case 'md5':
    case 'sha':
    case 'sha256':
      return constantTimeEqual(Buffer.from(stored.password, 'utf8'), Buffer.from(saltedDigest(stored.hash, stored.salt, bytes), 'utf8'))
    default:
      return false
  }
}

/** Lower-case hex digest of salt bytes ‖ password bytes. */
function saltedDigest (hash: 'md5' | 'sha' | 'sha256', saltHex: string, password: Buffer): string {
  return createHash(DIGESTS[hash]).update(Buffer.from(saltHex, 'hex')).update(password).digest('hex')
}

/**
 * Equality of two byte strings of any lengths, in time independent of their contents and
 * lengths: both are hashed to 32 bytes (SHA-256) and compared with `timingSafeEqual`. Shared
 * with the external backends' checks (`plugins/auth/backend/password-check.ts`).
 */
export function constantTimeEqual (a: Buffer, b: Buffer): boolean {
  const da = createHash('sha256').update(a).digest()
  const db = createHash('sha256').update(b).digest()
  return timingSafeEqual(da, db)
}
