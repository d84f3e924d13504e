/**
 * The service layer of the built-in credential tables: client ids (`svc_auth_clientid`,
 * store table `auth_clientid`) and usernames (`svc_auth_username`, table `auth_username`),
 * each mapping an id to a hashed password. `starling-ctl clientid|users ...` and the
 * `/api/v3/auth_clientid|auth_username` endpoints both call these functions; the plugins'
 * authenticators read through them.
 *
 * Entries live in the node's store, so they survive restarts. Given the node's shared data
 * (`node.shared`), the tables are cluster-wide (docs/cluster-data.md): an entry added on any
 * node authenticates on every node. Nothing is cached: every lookup reads the table, so a
 * change from another node applies here as soon as it is applied to the table.
 */
import bcrypt from 'bcryptjs'
import { MAX_KEY_BYTES, type Store, type StoreTable } from '../../node/store/index.js'
import type { AuthVerdict } from '../../node/mqtt/broker.js'
import {
  CredentialEmptyError, CredentialExistsError, CredentialInvalidError, CredentialNotFoundError, type CredentialKind
} from './errors.js'
import {
  DEFAULT_PASSWORD_HASH, hashPassword, verifyPassword, type PasswordHashName, type StoredPassword
} from './password-hash.js'

/** Store table of `svc_auth_clientid`. */
export const AUTH_CLIENTID_TABLE = 'auth_clientid'
/** Store table of `svc_auth_username`. */
export const AUTH_USERNAME_TABLE = 'auth_username'

/** A stored value: the hashed password and when the entry was added (ms since epoch). */
export interface CredentialRecord extends StoredPassword {
  created_at: number
}

/** An entry as {@link CredentialService.lookup} returns it: the record and its id. */
export interface CredentialEntry extends CredentialRecord {
  id: string
}

/** Options of the credential services. */
export interface CredentialServiceOptions {
  /** Hash for entries added or updated through this service (default `sha256`). */
  passwordHash?: PasswordHashName
}

/** One credential table. Writes validate first and change nothing when they throw. */
export interface CredentialService {
  /** `client id` or `username`, for messages. */
  readonly kind: CredentialKind
  /** The store table name. */
  readonly table: string
  /** The hash new and updated entries get. */
  readonly passwordHash: PasswordHashName
  /**
   * Adds `id` with `password`. Throws CredentialExistsError (113) when `id` is there,
   * CredentialEmptyError (104) for an empty id or password, CredentialInvalidError (108)
   * for one that cannot be stored.
   */
  add (id: string, password: string): Promise<void>
  /** Sets a new password for `id`, keeping `created_at`; CredentialNotFoundError (105) when unknown. */
  update (id: string, password: string): Promise<void>
  /** Removes `id`; CredentialNotFoundError (105) when unknown. */
  delete (id: string): Promise<void>
  /** Every id, in byte order. */
  list (): string[]
  /** The entry of `id`, or undefined. */
  lookup (id: string): CredentialEntry | undefined
  /**
   * Writes `id` with a password already hashed (a data import), replacing an entry of that id;
   * CredentialEmptyError (104) / CredentialInvalidError (108) for an id that cannot be stored.
   */
  restore (id: string, stored: StoredPassword, createdAt: number): Promise<void>
  /**
   * The auth chain's decision for `id` (undefined: the client gave none) and `password`:
   * `ignore` without an entry, `allow` when the password matches, `deny` otherwise
   * (wrong or missing password).
   */
  authenticate (id: string | undefined, password: Buffer | undefined): Promise<AuthVerdict>
}

/**
 * Where the credential tables live: the node's shared data (`node.shared`, cluster-wide) or,
 * for a node alone and in tests, its store.
 */
export type CredentialTables = Pick<Store, 'table'>

/** The client id table (`auth_clientid`) of `tables` (pass `node.shared`: cluster-wide). */
export function createAuthClientids (tables: CredentialTables, opts: CredentialServiceOptions = {}): CredentialService {
  return createCredentialService(tables, AUTH_CLIENTID_TABLE, 'client id', 'clientid', opts)
}

/** The username table (`auth_username`) of `tables` (pass `node.shared`: cluster-wide). */
export function createAuthUsers (tables: CredentialTables, opts: CredentialServiceOptions = {}): CredentialService {
  return createCredentialService(tables, AUTH_USERNAME_TABLE, 'username', 'users', opts)
}

/**
 * Ids whose `add` is between its existence check and its commit, per table (all services
 * of one store share the table object). A second `add` of such an id must fail as if the
 * first had committed: the store only shows committed writes.
 */
const pendingAdds = new WeakMap<StoreTable<CredentialRecord>, Set<string>>()

function createCredentialService (
  tables: CredentialTables, tableName: string, kind: CredentialKind, command: string, opts: CredentialServiceOptions
): CredentialService {
  const table = tables.table<CredentialRecord>(tableName)
  const passwordHash = opts.passwordHash ?? DEFAULT_PASSWORD_HASH
  let pending = pendingAdds.get(table)
  if (pending === undefined) pendingAdds.set(table, pending = new Set())
  const adding = pending

  const validId = (id: unknown): string => {
    if (typeof id !== 'string') throw new CredentialInvalidError(`${kind} must be a string`)
    if (id === '') throw new CredentialEmptyError(kind)
    if (Buffer.byteLength(id) > MAX_KEY_BYTES) throw new CredentialInvalidError(`${kind} is longer than ${MAX_KEY_BYTES} bytes`)
    return id
  }
  const validPassword = (password: unknown): string => {
    if (typeof password !== 'string') throw new CredentialInvalidError('password must be a string')
    if (password === '') throw new CredentialEmptyError('password')
    if (passwordHash === 'bcrypt' && bcrypt.truncates(password)) {
      throw new CredentialInvalidError('password is longer than 72 bytes, the most bcrypt uses; choose a shorter one')
    }
    return password
  }
  /** The entry of a valid id; ids the store cannot hold have none. */
  const read = (id: string): CredentialRecord | undefined =>
    Buffer.byteLength(id) > MAX_KEY_BYTES ? undefined : table.get(id)

  return {
    kind,
    table: tableName,
    passwordHash,

    async add (id, password) {
      validId(id)
      validPassword(password)
      if (table.has(id) || adding.has(id)) throw new CredentialExistsError(kind, id, command)
      adding.add(id)
      try {
        const stored = await hashPassword(passwordHash, password)
        await table.put(id, { ...stored, created_at: Date.now() })
      } finally {
        adding.delete(id)
      }
    },

    async update (id, password) {
      validId(id)
      validPassword(password)
      if (!table.has(id)) throw new CredentialNotFoundError(kind, id, command)
      const stored = await hashPassword(passwordHash, password)
      // re-read after the (possibly slow) hash: a delete meanwhile wins
      const current = table.get(id)
      if (current === undefined) throw new CredentialNotFoundError(kind, id, command)
      await table.put(id, { ...stored, created_at: current.created_at })
    },

    async delete (id) {
      validId(id)
      if (!table.has(id)) throw new CredentialNotFoundError(kind, id, command)
      await table.del(id)
    },

    list () {
      return [...table.entries()].map(([id]) => id)
    },

    lookup (id) {
      if (typeof id !== 'string' || id === '') return undefined
      const record = read(id)
      return record === undefined ? undefined : { id, ...record }
    },

    async restore (id, stored, createdAt) {
      validId(id)
      await table.put(id, { hash: stored.hash, salt: stored.salt, password: stored.password, created_at: createdAt })
    },

    async authenticate (id, password) {
      if (id === undefined || id === '') return 'ignore'
      const record = read(id)
      if (record === undefined) return 'ignore'
      if (password === undefined || password.length === 0) return 'deny'
      return await verifyPassword(record, password) ? 'allow' : 'deny'
    }
  }
}
