/**
 * Errors of the built-in credential tables: kinds of the node's error catalogue
 * (`node/errors.ts`, which gives each its code and HTTP status: 104, 105, 108, 113, or 102
 * where none fits); the control server and the API pass them on as `{code, message}`.
 */
import { ApiError, ERRORS, type ErrorKind } from '../../node/errors.js'

/** What a credential table keys by, for messages: `client id` or `username`. */
export type CredentialKind = 'client id' | 'username'

/** Base class: every credential error is an API error of its catalogue kind. */
export class AuthError extends ApiError {
  constructor (kind: ErrorKind, message: string) {
    super(kind, message)
    this.name = kind.name
  }
}

/** `add` of an id that is already there (spec code 113, user already exists). */
export class CredentialExistsError extends AuthError {
  constructor (kind: CredentialKind, id: string, command: string) {
    super(ERRORS.CredentialExistsError, `${kind} ${JSON.stringify(id)} already exists; change its password with \`${command} update\` instead`)
  }
}

/** `update`/`delete` of an id that is not there (spec code 105, user does not exist). */
export class CredentialNotFoundError extends AuthError {
  constructor (kind: CredentialKind, id: string, command: string) {
    super(ERRORS.CredentialNotFoundError, `${kind} ${JSON.stringify(id)} does not exist; \`${command} list\` shows the known ones`)
  }
}

/** An empty id or password (spec code 104, user name or password empty). */
export class CredentialEmptyError extends AuthError {
  constructor (what: string) {
    super(ERRORS.CredentialEmptyError, `${what} is empty; give a non-empty value`)
  }
}

/** An id or password that cannot be stored, e.g. too long or not text (spec code 108, wrong type). */
export class CredentialInvalidError extends AuthError {
  constructor (message: string) {
    super(ERRORS.CredentialInvalidError, message)
  }
}

/** A credential command while its plugin is not loaded (code 102: the spec has none for it). */
export class AuthPluginNotLoadedError extends AuthError {
  constructor (plugin: string) {
    super(ERRORS.AuthPluginNotLoadedError, `plugin ${plugin} is not loaded; load it first with \`starling-ctl plugins load ${plugin}\``)
  }
}
