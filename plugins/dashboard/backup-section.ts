/**
 * The dashboard users in a data backup (EMQ X 4's `users`: `username`, `password`, `tags`;
 * docs/backup.md). `password` is base64 of the hash as stored: ours (a bcrypt string, or the
 * `sha256:` form of a generated first password) or, from EMQ X, its salted SHA-256 (4.3+) or
 * MD5 (4.0-4.2) bytes, kept so that the user signs in with the same password and is rehashed
 * with bcrypt at that first sign-in.
 */
import type { BackupSection, SkippedEntry } from '../../node/ops/backup/sections.js'
import { at, entriesOf, optionalText, requiredText } from '../../node/ops/backup/entries.js'
import { checkUsername, emqxPasswordHash, isStoredPasswordHash, type DashboardUsers } from './users.js'

/** The `users` section of `users`. */
export function dashboardUsersSection (users: DashboardUsers): BackupSection {
  return {
    name: 'users',
    export: () => ({
      users: users.exportAll().map(u => ({ username: u.username, password: exportedHash(u.password_hash), tags: u.tags }))
    }),
    check (file) {
      const skipped: SkippedEntry[] = []
      const writes: Array<{ username: string, tags: string, hash: string }> = []
      entriesOf(file, 'users').forEach((entry, i) => {
        const where = at('users', i)
        const username = checkUsername(requiredText(entry, 'username', where))
        const bytes = Buffer.from(requiredText(entry, 'password', where), 'base64')
        const text = bytes.toString('utf8')
        const hash = isStoredPasswordHash(text) ? text : emqxPasswordHash(bytes)
        if (hash === undefined) {
          skipped.push({ section: 'users', entry: username, reason: 'its password hash is in no form Starling reads; add the user again (starling-ctl admins add)' })
          return
        }
        writes.push({ username, tags: optionalText(entry, 'tags', where), hash })
      })
      return {
        counts: { users: writes.length },
        skipped,
        notes: [],
        apply: async () => { for (const w of writes) await users.restore(w.username, w.tags, w.hash) }
      }
    }
  }
}

/** base64 of a stored hash: an EMQ X one as EMQ X kept it (salt and digest bytes, so EMQ X reads it too), ours as its text. */
function exportedHash (hash: string): string {
  const [scheme, salt, digest] = hash.split(':')
  if ((scheme === 'emqx-sha256' || scheme === 'emqx-md5') && salt !== undefined && digest !== undefined) {
    return Buffer.concat([Buffer.from(salt, 'hex'), Buffer.from(digest, 'hex')]).toString('base64')
  }
  return Buffer.from(hash, 'utf8').toString('base64')
}
