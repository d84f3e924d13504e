/**
 * Errors of svc_dashboard's users and sessions: kinds of the node's error catalogue
 * (`node/errors.ts` gives each its spec code and HTTP status: 103, 104, 105, 106, 113, or 102
 * where none fits); the dashboard listener answers them as `{code, message}`, the control
 * socket passes them on to `starling-ctl admins`. A wrong old password is the catalogue's
 * generic `OldPasswordWrongError` (114).
 */
import { ApiError, ERRORS, type ErrorKind } from '../../node/errors.js'

/** Base class: every dashboard error is an API error of its catalogue kind. */
export class DashboardError extends ApiError {
  constructor (kind: ErrorKind, message: string) {
    super(kind, message)
    this.name = kind.name
  }
}

/**
 * A sign-in (or HTTP Basic) with an unknown user or a wrong password (spec code 103). One
 * message for both, so an answer does not tell which user names exist.
 */
export class DashboardWrongCredentialsError extends DashboardError {
  constructor () {
    super(ERRORS.DashboardWrongCredentialsError, ERRORS.DashboardWrongCredentialsError.message)
  }
}

/** A sign-in held back too long by earlier wrong passwords (103, HTTP 429, `Retry-After`). */
export class DashboardSlowDownError extends DashboardError {
  constructor (readonly retryAfter: number) {
    super(ERRORS.DashboardSlowDownError, `too many wrong passwords for this user or from this address; try again in ${retryAfter} s`)
  }
}

/** An empty (or missing) user name or password (spec code 104). */
export class DashboardEmptyCredentialsError extends DashboardError {
  constructor (what: string) {
    super(ERRORS.DashboardEmptyCredentialsError, `${what} is empty`)
  }
}

/** An `/api/v3/` request on the dashboard listener that is not signed in (104, HTTP 401). */
export class DashboardSignInRequiredError extends DashboardError {
  constructor (why: string) {
    super(ERRORS.DashboardSignInRequiredError, `sign in first: ${why}`)
  }
}

/** A user name that is not a dashboard user (spec code 105). */
export class DashboardUserNotFoundError extends DashboardError {
  constructor (name: string) {
    super(ERRORS.DashboardUserNotFoundError, `dashboard user ${name} does not exist; GET /api/v3/users lists them`)
  }
}

/** Deleting the default user (spec code 106). */
export class DashboardAdminNotDeletableError extends DashboardError {
  constructor (name: string) {
    super(ERRORS.DashboardAdminNotDeletableError, `the default dashboard user ${name} cannot be deleted`)
  }
}

/** Adding a user name that exists (spec code 113). */
export class DashboardUserExistsError extends DashboardError {
  constructor (name: string) {
    super(ERRORS.DashboardUserExistsError, `dashboard user ${name} already exists`)
  }
}

/** A write a browser may have been made to send from another site (102, HTTP 403). */
export class DashboardCrossSiteError extends DashboardError {
  constructor (why: string) {
    super(ERRORS.DashboardCrossSiteError, `cross-site request refused: ${why}`)
  }
}
