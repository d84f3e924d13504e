/**
 * The node's error catalogue: every error an API handler or a CLI command throws is an
 * {@link ApiError} with the spec's code (section Errors) and an HTTP status chosen here (the
 * spec leaves the mapping open; docs/api.md lists it). The API's error middleware and the
 * control socket turn them into `{code, message}`. Subsystem errors (auth, banned, plugins)
 * carry the same numeric codes and are converted by {@link toApiError}.
 */

/** Spec error codes. */
export const CODES = {
  BADRPC: 101,
  UNKNOWN: 102,
  WRONG_CREDENTIALS: 103,
  EMPTY_CREDENTIALS: 104,
  USER_NOT_FOUND: 105,
  ADMIN_NOT_DELETABLE: 106,
  MISSING_PARAMETER: 107,
  WRONG_TYPE: 108,
  NOT_JSON: 109,
  PLUGIN_STARTED: 110,
  PLUGIN_STOPPED: 111,
  CLIENT_OFFLINE: 112,
  USER_EXISTS: 113,
  OLD_PASSWORD_WRONG: 114,
  BAD_TOPIC: 115,
  BAD_QOS: 116
} as const

/** HTTP status per spec code (docs/api.md). */
export const HTTP_STATUS: Record<number, number> = {
  101: 502,
  102: 400,
  103: 401,
  104: 401,
  105: 404,
  106: 400,
  107: 400,
  108: 400,
  109: 400,
  110: 400,
  111: 400,
  112: 404,
  113: 400,
  114: 400,
  115: 400,
  116: 400
}

/** An error answered as `{code, message}` with `status`. */
export class ApiError extends Error {
  constructor (readonly code: number, message: string, readonly status: number = HTTP_STATUS[code] ?? 400) {
    super(message)
    this.name = 'ApiError'
  }
}

/** `what` does not exist: HTTP 404 with code 102 (the spec has no not-found code). */
export function notFound (what: string): ApiError {
  return new ApiError(CODES.UNKNOWN, `${what} not found`, 404)
}

/**
 * Turns anything a service threw into an ApiError. Errors of the node's subsystems carry a
 * numeric `code` from the spec's range (auth 104/105/113, banned 107/108, plugins 110/111 ...);
 * anything else is an internal error (500, code 102) whose message is kept.
 */
export function toApiError (err: unknown): ApiError {
  if (err instanceof ApiError) return err
  const e = err as { code?: unknown, message?: string, status?: number, statusCode?: number }
  if (typeof e?.code === 'number' && e.code >= 101 && e.code <= 116) {
    const status = typeof e.status === 'number' && e.status >= 400 && e.status < 600 ? e.status : HTTP_STATUS[e.code]
    return new ApiError(e.code, e.message ?? 'error', status)
  }
  return new ApiError(CODES.UNKNOWN, e?.message ?? String(err), 500)
}
