/**
 * The built-in credential tables for the API (`/api/v3/auth_clientid`, `/api/v3/auth_username`,
 * EMQ X 4's emqx_auth_clientid / emqx_auth_username APIs): node operations `auth.list`,
 * `auth.lookup`, `auth.add`, `auth.update`, `auth.delete` over the credential services
 * (plugins/auth), and the service functions the handlers call.
 *
 * - The tables live in the store (cluster-wide data), so they are managed whether or not
 *   their plugin is loaded; the plugin decides whether CONNECTs are checked against them.
 * - New and updated passwords get the hash configured in the plugin's file
 *   (`auth.client.password_hash` / `auth.user.password_hash`, default sha256): the hash the
 *   loaded plugin uses, or would use once loaded.
 */
import type { StarlingNode } from '../../node/node.js'
import type { NodeServices } from '../../node/services.js'
import { UserExistsError, UserNotFoundError } from '../../node/errors.js'
import { REDACTED } from '../../node/config/index.js'
import { CredentialExistsError, CredentialNotFoundError } from './errors.js'
import { DEFAULT_PASSWORD_HASH, isPasswordHashName } from './password-hash.js'
import { createAuthClientids, createAuthUsers, type CredentialService } from './credentials.js'

/** The two credential tables, by the name of their API path. */
export type CredentialTable = 'auth_clientid' | 'auth_username'

interface TableSpec {
  plugin: string
  hashKey: string
  /** The id field of the API's entries (`clientid` or `username`). */
  field: 'clientid' | 'username'
  create: typeof createAuthClientids
}

const TABLES: Readonly<Record<CredentialTable, TableSpec>> = {
  auth_clientid: { plugin: 'svc_auth_clientid', hashKey: 'auth.client.password_hash', field: 'clientid', create: createAuthClientids },
  auth_username: { plugin: 'svc_auth_username', hashKey: 'auth.user.password_hash', field: 'username', create: createAuthUsers }
}

/** An entry as `GET /auth_clientid/:clientid` shows it: the id and the stored (hashed) password; `******` for a `plain` one. */
export type CredentialView = { clientid: string, password: string } | { username: string, password: string }

/** What the service functions use of the node: its RPC and its name (they run `auth.*` on this node). */
export type AuthComponents = Pick<StarlingNode, 'rpc' | 'name'>

/** What the `auth.*` operations use of the node: the cluster-wide tables and the plugins (the hash each table's plugin is configured with). */
export type AuthOperationComponents = Pick<StarlingNode, 'shared'> & { services: Pick<NodeServices, 'plugins'> }

/** Arguments of the `auth.*` operations. */
interface AuthArgs { table: CredentialTable, id?: string, password?: string }

/** The service of `table` with the hash configured for its plugin (default when the file is unusable). */
function serviceOf (node: AuthOperationComponents, table: CredentialTable): CredentialService {
  const spec = TABLES[table]
  let passwordHash = DEFAULT_PASSWORD_HASH
  try {
    const configured = node.services.plugins.readConfig(spec.plugin)[spec.hashKey]
    if (isPasswordHashName(configured)) passwordHash = configured
  } catch {
    // a plugin file with an error keeps the plugin from loading; entries still get a hash
  }
  return spec.create(node.shared, { passwordHash })
}

/** Errors in the API's words: the services' messages point at the CLI. */
function inApiTerms (table: CredentialTable, id: string, err: unknown): unknown {
  const { field } = TABLES[table]
  if (err instanceof CredentialNotFoundError) {
    return new UserNotFoundError(`${field} ${JSON.stringify(id)} does not exist; GET /api/v3/${table} lists them`)
  }
  if (err instanceof CredentialExistsError) {
    return new UserExistsError(`${field} ${JSON.stringify(id)} already exists; change its password with PUT /api/v3/${table}/:${field}`)
  }
  return err
}

async function run<T> (table: CredentialTable, id: string, fn: () => Promise<T> | T): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    throw inApiTerms(table, id, err)
  }
}

/** Every id of `table`, in byte order. */
export async function listCredentials (node: AuthComponents, table: CredentialTable): Promise<string[]> {
  return await node.rpc.call<string[]>(node.name, `${table}.list`, { table })
}

/** One entry; 105 (HTTP 404) when `id` is unknown. */
export async function lookupCredential (node: AuthComponents, table: CredentialTable, id: string): Promise<CredentialView> {
  return await node.rpc.call<CredentialView>(node.name, `${table}.lookup`, { table, id })
}

/** Adds `id` with `password`: 113 when it exists, 104 for an empty one, 108 for one that cannot be stored. */
export async function addCredential (node: AuthComponents, table: CredentialTable, id: string, password: string): Promise<void> {
  await node.rpc.call(node.name, `${table}.add`, { table, id, password })
}

/** Sets the password of `id`: 105 when it is unknown. */
export async function updateCredential (node: AuthComponents, table: CredentialTable, id: string, password: string): Promise<void> {
  await node.rpc.call(node.name, `${table}.update`, { table, id, password })
}

/** Deletes `id`: 105 when it is unknown. */
export async function deleteCredential (node: AuthComponents, table: CredentialTable, id: string): Promise<void> {
  await node.rpc.call(node.name, `${table}.delete`, { table, id })
}

/**
 * Registers the operations of one table on `node.rpc` (`auth_clientid.list`, `.lookup`, `.add`,
 * `.update`, `.delete`): its plugin's `attach`, so the table is managed whether or not the
 * plugin is loaded. Returns the function that removes them.
 */
export function registerAuthOperations (node: AuthOperationComponents & Pick<StarlingNode, 'rpc'>, table: CredentialTable): () => void {
  const id = (args: AuthArgs): string => args.id as string
  const { field } = TABLES[table]
  const operations: Record<string, (args: AuthArgs) => unknown> = {
    list: () => serviceOf(node, table).list(),
    lookup: async (args) => await run(table, id(args), () => {
      const entry = serviceOf(node, table).lookup(id(args))
      if (entry === undefined) throw new CredentialNotFoundError(field === 'clientid' ? 'client id' : 'username', id(args), '')
      // a hash is shown (EMQ X did); a `plain` entry's password is the password itself: masked
      return { [field]: entry.id, password: entry.hash === 'plain' ? REDACTED : entry.password } as CredentialView
    }),
    add: async (args) => await run(table, id(args), async () => await serviceOf(node, table).add(id(args), args.password as string)),
    update: async (args) => await run(table, id(args), async () => await serviceOf(node, table).update(id(args), args.password as string)),
    delete: async (args) => await run(table, id(args), async () => await serviceOf(node, table).delete(id(args)))
  }
  for (const [name, operation] of Object.entries(operations)) node.rpc.register(`${table}.${name}`, operation)
  return () => { for (const name of Object.keys(operations)) node.rpc.unregister(`${table}.${name}`) }
}
