/**
 * The shared framework of the external auth/ACL backends (`svc_auth_mysql`, `_pgsql`,
 * `_redis`, `_mongo`, `_http`, `_ldap`, `_jwt`): EMQ X 4.4's placeholders compiled once
 * and rendered safely per request (SQL as bound parameters, Redis as argv, LDAP escaped),
 * its `password_hash` checks, its ACL row/hash/claim forms, and the verdict types.
 */
export {
  PLACEHOLDERS, isPlaceholderKey, parseTemplate, placeholderValue, missingPlaceholders, renderString,
  compileRedisCommand, renderRedisCommand, escapeLdapFilterValue, escapeLdapDnValue, renderLdapFilter, renderLdapDn,
  badTemplate
} from './placeholders.js'
export type { AuthContext, PlaceholderKey, TemplatePart, Template, ConfigOrigin, RedisCommandTemplate } from './placeholders.js'
export { compileSqlTemplate, renderSql } from './sql-template.js'
export type { SqlDialect, SqlQuery, SqlTemplate } from './sql-template.js'
export {
  BACKEND_HASHES, PBKDF2_MACFUNS, PBKDF2_MAX_ITERATIONS, PBKDF2_MAX_DKLEN,
  parsePasswordHash, createPasswordChecker, computePasswordHash, formatPasswordHash
} from './password-check.js'
export type { BackendHashName, Pbkdf2Macfun, PasswordHashSpec, PasswordChecker } from './password-check.js'
export { AclRowError, compileAclRows, decideAclRows, decideRedisAcl, decideJwtAcl } from './acl-rows.js'
export type { AclClient, AclRow, RedisAclHash } from './acl-rows.js'
export { BACKEND_VERDICTS, isBackendVerdict, parseSuperuser, skipsBackendAcl } from './verdict.js'
export type { BackendVerdict } from './verdict.js'
export { defineAuthBackend, commonBackendKeys, authContextOf, aclContextOf } from './plugin.js'
export type { BackendDefinition, BackendClient, BackendRequest, BackendAuthResult, BackendOpenContext, BackendCounts, BackendInstance } from './plugin.js'
