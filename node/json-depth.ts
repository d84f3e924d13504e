/**
 * A bound on how deeply JSON input may nest. `JSON.parse` copes with any depth, but what is
 * done with the value afterwards recurses once per level: `JSON.stringify` when the API
 * answers it, the store's encoding when it is saved, the action templates filled on every
 * message (rules/template.ts). A request body 20,000 levels deep was stored, then answered
 * with HTTP 500 "Maximum call stack size exceeded". So every JSON input (the API's bodies,
 * the JSON arguments of starling-ctl) is checked once, where it is parsed, against
 * {@link MAX_JSON_DEPTH} (protoc's default recursion limit), and refused with
 * {@link JsonTooDeepError} (code 102, HTTP 400).
 */
import { JsonTooDeepError } from './errors.js'

/** At most this many objects and arrays inside one another (the outermost one is level 1). */
export const MAX_JSON_DEPTH = 100

/**
 * Whether `value` nests objects and arrays more than `max` levels deep. Walks with its own
 * stack, so it cannot overflow on what it refuses, and stops at the first level too deep.
 */
export function jsonDepthExceeds (value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  if (typeof value !== 'object' || value === null) return false
  const stack: Array<{ node: object, depth: number }> = [{ node: value, depth: 1 }]
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!
    if (depth > max) return true
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === 'object' && child !== null) stack.push({ node: child, depth: depth + 1 })
    }
  }
  return false
}

/** `value`, or {@link JsonTooDeepError} naming `what` when it nests deeper than {@link MAX_JSON_DEPTH}. */
export function checkJsonDepth<T> (value: T, what: string): T {
  if (jsonDepthExceeds(value)) throw new JsonTooDeepError(what, MAX_JSON_DEPTH)
  return value
}
