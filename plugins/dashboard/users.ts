/**
 * The dashboard's users (EMQ X 4's `mqtt_admin` table of emqx_dashboard): who may sign in on
 * the dashboard listener. Shared by the dashboard's endpoints (`/api/v3/users`, `/auth`,
 * `/change_pwd`), its sessions (sessions.ts) and `starling-ctl admins`.
 *
 * Invariants:
 * - The table lives in the node's shared data (`node.shared`): a user added, changed or
 *   deleted on one node applies on every node of the cluster once replicated.
 * - A password is kept only as a hash: bcrypt (cost {@link BCRYPT_COST}) for every password a
 *   person chose; the default user's generated first password (144 random bits, nothing to
 *   guess) as a salted SHA-256, as the API secrets are, so that a node's first start does not
 *   pay for bcrypt (0.2-0.5 s of CPU on a small machine); a hash EMQ X 4 made (a data import's,
 *   `emqx-sha256:`/`emqx-md5:`) until the user's first sign-in, which rehashes with bcrypt. No
 *   answer, list, log line or error message carries a password or a hash ({@link shown}); a data
 *   export carries the hashes ({@link DashboardUsers.exportAll}, docs/backup.md).
 * - `generation` only grows: sign-out and every password change bump it, and a session token
 *   carries the generation it was issued under, so that bump ends every earlier token of the
 *   user on every node (sessions.ts).
 * - `must_change` is true for the default user created at first start until its password is
 *   changed (`change_pwd`, `admins passwd`); the sign-in answer shows it.
 */
import bcrypt from 'bcryptjs'
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { MAX_KEY_BYTES, type Store, type StoreTable } from '../../node/store/index.js'
import { OldPasswordWrongError, WrongTypeError } from '../../node/errors.js'
import {
  DashboardAdminNotDeletableError, DashboardEmptyCredentialsError, DashboardUserExistsError, DashboardUserNotFoundError
} from './errors.js'

/** The store table of the dashboard users (cluster-wide data): EMQ X's table name. */
export const DASHBOARD_USERS_TABLE = 'mqtt_admin'

/** bcrypt's cost factor: 2^10 rounds, about 50-100 ms per hash on this machine. */
export const BCRYPT_COST = 10

/** bcrypt reads at most 72 bytes of a password: a longer one is refused rather than cut. */
export const MAX_PASSWORD_BYTES = 72

/** The tags of the default user, as EMQ X 4 gave its admin. */
export const DEFAULT_USER_TAGS = 'administrator'

/** A dashboard user as shown (`GET /api/v3/users`): EMQ X's `{username, tags}`. */
export interface DashboardUser {
  username: string
  tags: string
}

/** A user as stored. */
interface StoredUser extends DashboardUser {
  /** bcrypt string `$2b$10$...`, or `sha256:<salt hex>:<digest hex>` for a generated password. */
  password_hash: string
  /** The default user's first password is still in use. */
  must_change: boolean
  /** Bumped by sign-out and by every password change: ends the tokens issued before. */
  generation: number
}

/** What sign-in and HTTP Basic learn of a user whose password matched. */
export interface VerifiedUser extends DashboardUser {
  mustChange: boolean
  generation: number
}

/** Where the users live: `node.shared` (cluster-wide) or, alone, a store. */
export type UserTables = Pick<Store, 'table'>

/**
 * The dashboard users. Codes: 104 an empty name or password, 105 an unknown user, 106
 * deleting the default user, 108 a name or password that cannot be stored, 113 a name that
 * exists, 114 a wrong old password.
 */
export interface DashboardUsers {
  list: () => DashboardUser[]
  /** Adds a user; 113 when the name exists. */
  add: (username: unknown, password: unknown, tags?: unknown) => Promise<DashboardUser>
  /** Changes a user's tags; 105 for an unknown user. */
  update: (username: string, tags: unknown) => Promise<DashboardUser>
  /** Deletes a user; 105 unknown, 106 the default user. */
  delete: (username: string) => Promise<void>
  /** `change_pwd`: 105 unknown user, 114 wrong old password; ends the user's sessions. */
  changePassword: (username: string, oldPassword: unknown, newPassword: unknown) => Promise<void>
  /** `admins passwd`: sets a password without the old one; ends the user's sessions. */
  setPassword: (username: string, password: unknown) => Promise<void>
  /** The user when `password` is theirs, else undefined (unknown users cost a hash too). */
  verify: (username: string, password: string) => Promise<VerifiedUser | undefined>
  /** The user's token generation, or undefined when there is no such user. */
  generation: (username: string) => number | undefined
  /** The signed-in user as the web pages show it (`GET /api/v3/auth`), or undefined when there is no such user. */
  whoami: (username: string) => (DashboardUser & { must_change_password: boolean }) | undefined
  /** Ends every session of the user (sign-out). */
  revoke: (username: string) => Promise<void>
  /**
   * Creates the default user when it does not exist: with `configured` as its password, or a
   * generated one, which is returned (to be shown once); null when nothing was generated.
   */
  bootstrap: (login: string, configured: string) => Promise<string | null>
  /** Every user with the hash as stored, for a data export (docs/backup.md). */
  exportAll: () => Array<DashboardUser & { password_hash: string }>
  /**
   * Writes a user of a data import with a hash as {@link exportAll} gives it or as EMQ X
   * stored it ({@link emqxPasswordHash}), replacing a user of that name and ending its
   * sessions; 104/108 for a name that cannot be stored.
   */
  restore: (username: string, tags: string, passwordHash: string) => Promise<void>
}

/**
 * An EMQ X 4 dashboard password hash (`mqtt_admin`, base64 in its backups) in the form
 * stored here: 4 salt bytes then the SHA-256 (4.3 and later, 36 bytes) or MD5 (4.0-4.2,
 * 20 bytes) digest of salt ‖ password, kept as `emqx-sha256:<salt hex>:<digest hex>` or
 * `emqx-md5:...`. The user signs in with the same password; that first sign-in rehashes it
 * with bcrypt. Undefined for any other length.
 */
export function emqxPasswordHash (bytes: Buffer): string | undefined {
  const scheme = bytes.length === 36 ? 'emqx-sha256' : bytes.length === 20 ? 'emqx-md5' : undefined
  return scheme === undefined ? undefined : `${scheme}:${bytes.subarray(0, 4).toString('hex')}:${bytes.subarray(4).toString('hex')}`
}

/** Whether `hash` is a form this table stores: bcrypt, our SHA-256 form, or EMQ X's. */
export function isStoredPasswordHash (hash: string): boolean {
  return /^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$/.test(hash) || /^(sha256|emqx-sha256|emqx-md5):[0-9a-f]+:[0-9a-f]+$/.test(hash)
}

/**
 * A hash no password matches, compared against for unknown users so they take as long; made
 * at its first use (not at import: `starling-ctl` imports this module too). A constant, not
 * state: every node may share it.
 */
let noUserHash: Promise<string> | undefined
async function hashOfNoUser (): Promise<string> {
  noUserHash ??= bcrypt.hash(randomBytes(16).toString('hex'), BCRYPT_COST)
  return await noUserHash
}

/** 104 when empty, 108 unless a user name fit for HTTP Basic and the store. */
export function checkUsername (value: unknown): string {
  if (value === undefined || value === null || value === '') throw new DashboardEmptyCredentialsError('username')
  if (typeof value !== 'string') throw new WrongTypeError(`username must be a string, not ${JSON.stringify(value)}`)
  // eslint-disable-next-line no-control-regex
  if (/[:\s\u0000-\u001f\u007f]/.test(value)) throw new WrongTypeError(`username ${JSON.stringify(value)} cannot hold ':', spaces or control characters (it is the HTTP Basic user name)`)
  if (Buffer.byteLength(value) > MAX_KEY_BYTES) throw new WrongTypeError(`username is too long: at most ${MAX_KEY_BYTES} bytes`)
  return value
}

/** 104 when empty, 108 unless text bcrypt reads whole. Never puts the value in a message. */
function checkPassword (value: unknown, field: string): string {
  if (value === undefined || value === null || value === '') throw new DashboardEmptyCredentialsError(field)
  if (typeof value !== 'string') throw new WrongTypeError(`${field} must be a string`)
  if (Buffer.byteLength(value) > MAX_PASSWORD_BYTES) throw new WrongTypeError(`${field} is too long: at most ${MAX_PASSWORD_BYTES} bytes (bcrypt reads no more)`)
  return value
}

/** 108 unless text (absent: ''). */
function checkTags (value: unknown): string {
  if (value === undefined || value === null) return ''
  if (typeof value !== 'string') throw new WrongTypeError(`tags must be a string, not ${JSON.stringify(value)}`)
  return value
}

/** The shown form: never the hash. */
function shown (user: StoredUser): DashboardUser {
  return { username: user.username, tags: user.tags }
}

/** The salted SHA-256 form of a generated (high-entropy) password. */
function sha256Hash (password: string, salt: Buffer = randomBytes(16)): string {
  return `sha256:${salt.toString('hex')}:${createHash('sha256').update(salt).update(password).digest('hex')}`
}

/** Whether `password` is the one `hash` was made from (bcrypt, or the SHA-256 form in constant time). */
async function passwordMatches (password: string, hash: string): Promise<boolean> {
  if (hash.startsWith('emqx-')) return emqxPasswordMatches(password, hash)
  if (!hash.startsWith('sha256:')) return await bcrypt.compare(password, hash)
  const salt = hash.split(':')[1] ?? ''
  const given = Buffer.from(sha256Hash(password, Buffer.from(salt, 'hex')))
  const stored = Buffer.from(hash)
  return given.length === stored.length && timingSafeEqual(given, stored)
}

/** EMQ X's digest of salt ‖ password against `emqx-<digest>:<salt hex>:<digest hex>`, in constant time. */
function emqxPasswordMatches (password: string, hash: string): boolean {
  const [scheme, salt, digest] = hash.split(':')
  const algorithm = scheme === 'emqx-sha256' ? 'sha256' : scheme === 'emqx-md5' ? 'md5' : undefined
  if (algorithm === undefined || salt === undefined || digest === undefined) return false
  const given = createHash(algorithm).update(Buffer.from(salt, 'hex')).update(password).digest()
  const stored = Buffer.from(digest, 'hex')
  return given.length === stored.length && timingSafeEqual(given, stored)
}

/** A generated first password: 18 random bytes, base64url (24 characters). */
function generatePassword (): string {
  return randomBytes(18).toString('base64url')
}

/**
 * A short fingerprint of a stored hash, for the verified-credentials cache of HTTP Basic
 * (auth.ts): it changes whenever the password does.
 */
export function hashFingerprint (hash: string): string {
  return createHash('sha256').update(hash).digest('hex').slice(0, 16)
}

/** The users over table {@link DASHBOARD_USERS_TABLE} of `tables` (pass `node.shared`); `defaultLogin` is read at each delete. */
export function createDashboardUsers (tables: UserTables, defaultLogin: () => string): DashboardUsers & { fingerprint: (username: string) => string | undefined } {
  const table: StoreTable<StoredUser> = tables.table(DASHBOARD_USERS_TABLE)
  const find = (username: string): StoredUser | undefined =>
    Buffer.byteLength(username) > MAX_KEY_BYTES ? undefined : table.get(username)
  const get = (username: string): StoredUser => {
    const user = find(username)
    if (user === undefined) throw new DashboardUserNotFoundError(username)
    return user
  }
  const withPassword = async (user: StoredUser, password: string): Promise<StoredUser> =>
    ({ ...user, password_hash: await bcrypt.hash(password, BCRYPT_COST), must_change: false, generation: user.generation + 1 })
  return {
    list: () => [...table.entries()].map(([, u]) => shown(u)),
    async add (username, password, tags) {
      const name = checkUsername(username)
      const pwd = checkPassword(password, 'password')
      const t = checkTags(tags)
      if (table.has(name)) throw new DashboardUserExistsError(name)
      const user: StoredUser = { username: name, tags: t, password_hash: await bcrypt.hash(pwd, BCRYPT_COST), must_change: false, generation: 0 }
      // checked again after the hash: another add of the same name may have finished meanwhile
      if (table.has(name)) throw new DashboardUserExistsError(name)
      await table.put(name, user)
      return shown(user)
    },
    async update (username, tags) {
      const t = checkTags(tags)
      const user = { ...get(username), tags: t }
      await table.put(username, user)
      return shown(user)
    },
    async delete (username) {
      get(username)
      if (username === defaultLogin()) throw new DashboardAdminNotDeletableError(username)
      await table.del(username)
    },
    async changePassword (username, oldPassword, newPassword) {
      const user = get(username)
      const old = checkPassword(oldPassword, 'old_pwd')
      const pwd = checkPassword(newPassword, 'new_pwd')
      if (!await passwordMatches(old, user.password_hash)) throw new OldPasswordWrongError('old password wrong')
      await table.put(username, await withPassword(get(username), pwd))
    },
    async setPassword (username, password) {
      get(username)
      const pwd = checkPassword(password, 'password')
      await table.put(username, await withPassword(get(username), pwd))
    },
    async verify (username, password) {
      const user = username === '' ? undefined : find(username)
      const matches = await passwordMatches(password, user?.password_hash ?? await hashOfNoUser())
      if (!matches || user === undefined) return undefined
      if (user.password_hash.startsWith('emqx-')) {
        // an EMQ X hash brought by a data import: ours from the first sign-in on (sessions stay)
        const current = find(username)
        if (current?.password_hash === user.password_hash) await table.put(username, { ...current, password_hash: await bcrypt.hash(password, BCRYPT_COST) })
      }
      return { ...shown(user), mustChange: user.must_change, generation: user.generation }
    },
    generation: (username) => find(username)?.generation,
    whoami: (username) => {
      const user = find(username)
      return user === undefined ? undefined : { ...shown(user), must_change_password: user.must_change }
    },
    async revoke (username) {
      const user = find(username)
      if (user !== undefined) await table.put(username, { ...user, generation: user.generation + 1 })
    },
    fingerprint: (username) => {
      const user = find(username)
      return user === undefined ? undefined : hashFingerprint(user.password_hash) + ':' + String(user.generation)
    },
    exportAll: () => [...table.entries()].map(([, u]) => ({ ...shown(u), password_hash: u.password_hash })),
    async restore (username, tags, passwordHash) {
      const name = checkUsername(username)
      if (!isStoredPasswordHash(passwordHash)) throw new WrongTypeError(`user ${name}: the password hash is in no form Starling reads`)
      const before = find(name)
      await table.put(name, { username: name, tags: checkTags(tags), password_hash: passwordHash, must_change: false, generation: (before?.generation ?? 0) + 1 })
    },
    async bootstrap (login, configured) {
      if (table.has(login)) return null
      const password = configured !== '' ? configured : generatePassword()
      const user: StoredUser = {
        username: login,
        tags: DEFAULT_USER_TAGS,
        // a person chose the configured one: bcrypt; the generated one has nothing to guess
        password_hash: configured !== '' ? await bcrypt.hash(password, BCRYPT_COST) : sha256Hash(password),
        must_change: true,
        generation: 0
      }
      if (table.has(login)) return null
      await table.put(login, user)
      return configured !== '' ? null : password
    }
  }
}
