/**
 * Errors of the built-in credential tables. They live here until the node's error catalogue
 * (`node/errors.ts`) exists; names and codes are stable either way. `code` is the spec's API
 * code (Errors: 104, 105, 108, 113) or 102 where none fits; the control server and the API
 * pass it on as `{code, message}`.
 */

/** What a credential table keys by, for messages: `client id` or `username`. */
export type CredentialKind = 'client id' | 'username'

/** Base class: every credential error has a numeric API code. */
export class AuthError extends Error {
  readonly code: number

  constructor (message: string, code: number) {
    super(message)
    this.name = 'AuthError'
    this.code = code
  }
}

/** `add` of an id that is already there (spec code 113, user already exists). */
export class CredentialExistsError extends AuthError {
  constructor (kind: CredentialKind, id: string, command: string) {
    super(`${kind} ${JSON.stringify(id)} already exists; change its password with \`${command} update\` instead`, 113)
    this.name = 'CredentialExistsError'
  }
}

/** `update`/`delete` of an id that is not there (spec code 105, user does not exist). */
export class CredentialNotFoundError extends AuthError {
  constructor (kind: CredentialKind, id: string, command: string) {
    super(`${kind} ${JSON.stringify(id)} does not exist; \`${command} list\` shows the known ones`, 105)
    this.name = 'CredentialNotFoundError'
  }
}

/** An empty id or password (spec code 104, user name or password empty). */
export class CredentialEmptyError extends AuthError {
  constructor (what: string) {
    super(`${what} is empty; give a non-empty value`, 104)
    this.name = 'CredentialEmptyError'
  }
}

/** An id or password that cannot be stored, e.g. too long or not text (spec code 108, wrong type). */
export class CredentialInvalidError extends AuthError {
  constructor (message: string) {
    super(message, 108)
    this.name = 'CredentialInvalidError'
  }
}

/** A credential command while its plugin is not loaded (code 102: the spec has none for it). */
export class AuthPluginNotLoadedError extends AuthError {
  constructor (plugin: string) {
    super(`plugin ${plugin} is not loaded; load it first with \`starling-ctl plugins load ${plugin}\``, 102)
    this.name = 'AuthPluginNotLoadedError'
  }
}
