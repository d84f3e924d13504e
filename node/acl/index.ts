/**
 * Access control: EMQ X's `acl.conf` (term syntax) parsed into rules, decided in order with
 * `acl_nomatch` as the fallback, cached per client, reloaded by `starling-ctl acl reload`.
 * See docs/acl.md.
 */
export { createAclService } from './acl-service.js'
export type { AclService, AclServiceComponents } from './acl-service.js'
export { aclReloadCommand, ACL_CTL_COMMANDS } from './acl-ctl.js'
export type { AclReloadResult } from './acl-ctl.js'
export { parseAclText, loadAclFile, compileAclRules } from './acl-rules.js'
export type { AclRule, AclWho, AclTopic, AclAccess, AclPermission } from './acl-rules.js'
export { createAclRuleSet } from './acl-matcher.js'
export type { AclRuleSet, AclAction } from './acl-matcher.js'
export { AclCache } from './acl-cache.js'
export type { AclCacheInit } from './acl-cache.js'
export { AclFileError } from './acl-error.js'
export { parseTerms, describeTerm } from './term-parser.js'
export type { Term } from './term-parser.js'
export { parseCidr, parseIpAddress, cidrContains } from './ip-address.js'
export type { CidrBlock, IpAddress } from './ip-address.js'
