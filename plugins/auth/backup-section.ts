/**
 * The built-in credential tables in a data backup (docs/backup.md): each of svc_auth_clientid
 * and svc_auth_username adds the section of its table. An export writes EMQ X 4.4's
 * `auth_mnesia` entries (`login`, `type`, `password`, `created_at`) with the hash as stored;
 * an import reads those, EMQ X 4.1-4.2's `auth_clientid` / `auth_username` tables and
 * 4.0-4.2's untyped `auth_mnesia` (`login`, `password`, `is_superuser`; its logins are
 * usernames unless `auth.mnesia.as` says `clientid`, EMQ X's `--env`).
 *
 * EMQ X's stored passwords, base64 in the file (emqx_auth_mnesia, emqx_auth_clientid,
 * emqx_auth_username): 4 salt bytes then the lower-case hex digest of salt ‖ password
 * (`auth.*.password_hash`, sha256 by default; md5 and sha too), which is Starling's own
 * salted form with a 4-byte salt, so they are kept as they are and verify as they did. 4.2.10
 * and older wrote `auth_mnesia` passwords as the bare hex digest of the password (no salt, no
 * base64). Our own export adds `password_hash` (`sha256`, `bcrypt`, `plain` ...), which says
 * how to read `password`.
 */
import type { BackupSection, SkippedEntry } from '../../node/ops/backup/sections.js'
import { at, entriesOf, optionalText, requiredText, type BackupEntry } from '../../node/ops/backup/entries.js'
import { WrongTypeError } from '../../node/errors.js'
import { MAX_KEY_BYTES } from '../../node/store/index.js'
import type { CredentialService } from './credentials.js'
import { isPasswordHashName, type StoredPassword } from './password-hash.js'

/** EMQ X's name for the table's kind in `auth_mnesia.type` and `auth.mnesia.as`. */
type Login = 'clientid' | 'username'

/** Hex digest length by hash: how EMQ X's salted form is split. */
const DIGEST_HEX: ReadonlyArray<[number, StoredPassword['hash']]> = [[64, 'sha256'], [40, 'sha'], [32, 'md5']]

/** The section of `service`'s table (`auth_clientid` or `auth_username`). */
export function credentialSection (service: CredentialService, login: Login): BackupSection {
  const table = login === 'clientid' ? 'auth_clientid' : 'auth_username'
  return {
    name: table,
    export: () => ({
      auth_mnesia: service.list().flatMap(id => {
        const entry = service.lookup(id)
        if (entry === undefined) return []
        return [{ login: id, type: login, password: encodePassword(entry), password_hash: entry.hash, created_at: entry.created_at }]
      })
    }),
    check (file, ctx) {
      const skipped: SkippedEntry[] = []
      const notes: string[] = []
      const writes: Array<{ id: string, stored: StoredPassword, createdAt: number }> = []
      const take = (key: string, where: string, id: string, entry: BackupEntry): void => {
        if (Buffer.byteLength(id) > MAX_KEY_BYTES) throw new WrongTypeError(`${where}: ${login} is longer than ${MAX_KEY_BYTES} bytes`)
        const password = requiredText(entry, 'password', where)
        const hash = optionalText(entry, 'password_hash', where)
        if (hash !== '' && !isPasswordHashName(hash)) throw new WrongTypeError(`${where}.password_hash must be one of plain, md5, sha, sha256, bcrypt, not ${JSON.stringify(hash)}`)
        const stored = decodePassword(password, hash === '' ? undefined : hash)
        if (stored === undefined) {
          skipped.push({ section: key, entry: id, reason: 'its password hash is in a form Starling cannot verify (EMQ X\'s sha512 or pbkdf2): set a new password' })
          return
        }
        const createdAt = typeof entry.created_at === 'number' ? entry.created_at : ctx.nowMs
        writes.push({ id, stored, createdAt })
      }
      entriesOf(file, table).forEach((entry, i) => {
        const where = at(table, i)
        take(table, where, requiredText(entry, login, where), entry)
      })
      const oldAs: Login = ctx.env['auth.mnesia.as'] === 'clientid' ? 'clientid' : 'username'
      let untyped = 0
      let superusers = 0
      entriesOf(file, 'auth_mnesia').forEach((entry, i) => {
        const where = at('auth_mnesia', i)
        const type = entry.type
        if (type !== undefined && type !== 'clientid' && type !== 'username') throw new WrongTypeError(`${where}.type must be clientid or username, not ${JSON.stringify(type)}`)
        const id = requiredText(entry, 'login', where)
        if (type === undefined) untyped++
        if ((type ?? oldAs) !== login) return
        if (entry.is_superuser === true || entry.is_superuser === 'true') superusers++
        take('auth_mnesia', where, id, entry)
      })
      if (untyped > 0 && login === oldAs && ctx.env['auth.mnesia.as'] === undefined) {
        notes.push(`auth_mnesia: ${untyped} entries of EMQ X ${ctx.version} without a type were imported as usernames (EMQ X's default auth.mnesia.as = username); import again with --env '{"auth.mnesia.as":"clientid"}' if they were client ids`)
      }
      if (superusers > 0) notes.push(`auth_mnesia: ${superusers} ${table} entries had is_superuser; Starling's built-in tables have no superuser flag, so they get the ACL like any client`)
      return {
        counts: { [table]: writes.length },
        skipped,
        notes,
        apply: async () => { for (const w of writes) await service.restore(w.id, w.stored, w.createdAt) }
      }
    }
  }
}

/** The file's `password` of a stored entry: base64 of salt bytes ‖ digest text, or of the bcrypt or plain text. */
function encodePassword (stored: StoredPassword): string {
  return Buffer.concat([Buffer.from(stored.salt, 'hex'), Buffer.from(stored.password, 'utf8')]).toString('base64')
}

/** A file's `password` as a stored one, or undefined when its form is unknown. */
export function decodePassword (password: string, hash: StoredPassword['hash'] | undefined): StoredPassword | undefined {
  const bytes = Buffer.from(password, 'base64')
  if (hash === 'plain' || hash === 'bcrypt') return { hash, salt: '', password: bytes.toString('utf8') }
  if (hash !== undefined) {
    const length = DIGEST_HEX.find(([, h]) => h === hash)?.[0] ?? 0
    return saltedForm(bytes, length, hash)
  }
  // EMQ X: 4 salt bytes and a hex digest, base64; or (4.2.10 and older auth_mnesia) the bare hex digest
  for (const [length, name] of DIGEST_HEX) {
    if (bytes.length === 4 + length) {
      const found = saltedForm(bytes, length, name)
      if (found !== undefined) return found
    }
  }
  for (const [length, name] of DIGEST_HEX) {
    if (password.length === length && /^[0-9a-f]+$/.test(password)) return { hash: name, salt: '', password }
  }
  if (bytes.toString('utf8').startsWith('$2')) return { hash: 'bcrypt', salt: '', password: bytes.toString('utf8') }
  return undefined
}

function saltedForm (bytes: Buffer, digestLength: number, hash: StoredPassword['hash']): StoredPassword | undefined {
  if (bytes.length < digestLength) return undefined
  const digest = bytes.subarray(bytes.length - digestLength).toString('latin1')
  if (!/^[0-9a-f]+$/.test(digest)) return undefined
  return { hash, salt: bytes.subarray(0, bytes.length - digestLength).toString('hex'), password: digest }
}
