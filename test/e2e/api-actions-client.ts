/**
 * A small HTTP client for the api-actions suites: calls `/api/v3/...` of a test node with the
 * test credentials and answers the status and the parsed body.
 */
import type { Starling } from '../../bin/assemble.js'
import { API_AUTH } from '../helpers/node.js'

/** An answer of the API. */
export interface ApiAnswer { status: number, body: any }

/** Calls the node's API: `body` is sent as JSON, or as is when it is a string in `raw`. */
export type ApiCall = (method: string, path: string, body?: unknown, opts?: { raw?: boolean }) => Promise<ApiAnswer>

/** An {@link ApiCall} bound to `node` (its API port is looked up at each call: a reload changes it). */
export function apiOf (node: () => Starling): ApiCall {
  return async (method, path, body, opts = {}) => {
    const port = node().api.server?.port
    if (port === undefined) throw new Error('svc_management is not loaded')
    const headers: Record<string, string> = { authorization: API_AUTH }
    let payload: string | undefined
    if (body !== undefined) {
      headers['content-type'] = 'application/json'
      payload = opts.raw === true ? String(body) : JSON.stringify(body)
    }
    const res = await fetch(`http://127.0.0.1:${port}/api/v3${path}`, { method, headers, body: payload })
    const text = await res.text()
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) }
  }
}

/** Expects an error answer with `code` (and `status` when given) and a message. */
export function expectError (answer: ApiAnswer, code: number, status?: number): void {
  expect(answer.body).toMatchObject({ code })
  expect(typeof answer.body.message).toBe('string')
  if (status !== undefined) expect(answer.status).toBe(status)
  else expect(answer.status).toBeGreaterThanOrEqual(400)
}

/** Resolves after `ms` (to give a message that must not come the time to arrive). */
export async function settle (ms = 150): Promise<void> {
  await new Promise(resolve => setTimeout(resolve, ms))
}
