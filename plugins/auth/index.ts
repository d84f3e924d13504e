/**
 * Built-in MQTT client authentication: password hashing, the credential tables' service
 * layer (shared by the CLI and the API), the `svc_auth_clientid` / `svc_auth_username`
 * plugins and their ctl commands. See docs/auth.md.
 */
export {
  PASSWORD_HASHES, DEFAULT_PASSWORD_HASH, BCRYPT_COST, SALT_BYTES,
  hashPassword, verifyPassword, isPasswordHashName, parsePasswordHashName
} from './password-hash.js'
export type { PasswordHashName, StoredPassword } from './password-hash.js'
export {
  AUTH_CLIENTID_TABLE, AUTH_USERNAME_TABLE, createAuthClientids, createAuthUsers
} from './credentials.js'
export type { CredentialService, CredentialServiceOptions, CredentialRecord, CredentialEntry, CredentialTables } from './credentials.js'
export {
  AuthError, CredentialExistsError, CredentialNotFoundError, CredentialEmptyError, CredentialInvalidError,
  AuthPluginNotLoadedError
} from './errors.js'
export type { CredentialKind } from './errors.js'
export {
  svcAuthClientid, svcAuthUsername, AUTH_CLIENTID_CONFIG_SCHEMA, AUTH_USERNAME_CONFIG_SCHEMA, DEFAULT_AUTH_PRIORITY
} from './plugins.js'
export type { CredentialPluginInstance } from './plugins.js'
export {
  AUTH_CTL_COMMANDS, CLIENTID_CTL_COMMANDS, USERS_CTL_COMMANDS, CREDENTIAL_PLUGINS,
  credentialHandlers, attachCredentialPlaceholders, registerAuthControl, registerCredentialControl
} from './ctl.js'
export type { CredentialCommandGroup } from './ctl.js'
