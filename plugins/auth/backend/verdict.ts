/**
 * Small types and readings every external auth/ACL backend shares: what a backend answers
 * (docs/auth.md, "The chain": allow, deny, or ignore to pass to the next provider), how a
 * superuser column or field reads, and which usernames EMQ X's backend ACLs skip.
 *
 * Invariant: only an unmistakable "yes" makes a superuser; anything unknown (NULL, `0`,
 * `'true'`, a number other than 1) reads as false, so a schema mistake never grants rights.
 */

/** A backend's answer: decided (`allow`, `deny`) or passed on to the next provider (`ignore`). */
export type BackendVerdict = 'allow' | 'deny' | 'ignore'

/** Every {@link BackendVerdict}, for validation and tests. */
export const BACKEND_VERDICTS: readonly BackendVerdict[] = ['allow', 'deny', 'ignore']

/** Whether `value` is a {@link BackendVerdict}. */
export function isBackendVerdict (value: unknown): value is BackendVerdict {
  return value === 'allow' || value === 'deny' || value === 'ignore'
}

/**
 * Reads a superuser flag as EMQ X 4.4's backends did, whichever backend it came from:
 * MySQL `1` (TINYINT as a number, a BIGINT as a bigint, the text `'1'`, or a BIT(1)
 * buffer), PostgreSQL `true` (boolean column), Redis `"1"` (the `HGET` reply, text or
 * buffer), MongoDB `true`. Everything else is false.
 */
export function parseSuperuser (value: unknown): boolean {
  if (value === true || value === 1 || value === 1n || value === '1') return true
  if (Buffer.isBuffer(value)) return value.length === 1 && (value[0] === 1 || value[0] === 0x31)
  return false
}

/**
 * Whether EMQ X's backend ACLs (HTTP, MySQL, PostgreSQL, Redis, LDAP) skip this client:
 * a username starting with `$` (EMQ X's internal clients, the dashboard's `$...`) gets
 * `ignore` without a request to the backend. The JWT ACL has no such rule.
 */
export function skipsBackendAcl (username: string | undefined): boolean {
  return username !== undefined && username.startsWith('$')
}
