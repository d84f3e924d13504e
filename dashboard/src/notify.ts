/** Messages shown at the top of the page: the outcome of an action, or the API's error with its code. */
import { reactive } from 'vue'
import { ApiError } from './api'

/** One message. */
export interface Notice {
  id: number
  kind: 'ok' | 'error'
  text: string
}

/** The messages on screen. */
export const notices = reactive<Notice[]>([])
let next = 1

/** Shows `text` for a few seconds (errors until dismissed). */
export function notify (text: string, kind: Notice['kind'] = 'ok'): void {
  const id = next++
  notices.push({ id, kind, text })
  if (kind === 'ok') setTimeout(() => dismiss(id), 4000)
}

/** Removes a message. */
export function dismiss (id: number): void {
  const i = notices.findIndex(n => n.id === id)
  if (i >= 0) notices.splice(i, 1)
}

/** The text of an error as a page shows it: the API's message with its code. */
export function errorText (e: unknown): string {
  if (e instanceof ApiError) return e.code === undefined ? e.message : `${e.message} (code ${e.code})`
  return e instanceof Error ? e.message : String(e)
}

/** Shows an error. */
export function notifyError (e: unknown): void {
  notify(errorText(e), 'error')
}
