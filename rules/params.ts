/**
 * Checks parameters (an action's `params`, a resource's `config`) against their specs:
 * 107 for a missing required one, 108 for a wrong type, a value outside `enum` or one not of
 * its `format`. Unknown keys are kept (EMQ X passed them through). Defaults fill absent keys.
 */
import { parseDuration } from '../node/config/index.js'
import { MissingParameterError, WrongTypeError } from '../node/errors.js'
import { topicNameError } from '../node/mqtt/topic.js'
import type { ParamSpec, ParamSpecs } from './types.js'

/** The JSON type name of a value, as messages show it. */
function typeOf (value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  return typeof value
}

function hasType (spec: ParamSpec, value: unknown): boolean {
  // a duration is text (EMQ X's `"5s"`) or a number of milliseconds (configs stored before it was text)
  if (spec.format === 'duration' && typeof value === 'number') return Number.isFinite(value) && value >= 0
  switch (spec.type) {
    case 'integer': return Number.isInteger(value)
    case 'number': return typeof value === 'number' && Number.isFinite(value)
    case 'object': return typeof value === 'object' && value !== null && !Array.isArray(value)
    case 'array': return Array.isArray(value)
    default: return typeof value === spec.type
  }
}

/** Why `value` is not of `spec`'s format, or null. Placeholders (`${x}`) may stand in a topic. */
function formatError (spec: ParamSpec, value: unknown): string | null {
  if (typeof value !== 'string') return null
  if (spec.format === 'duration') return paramDuration(value) === undefined ? 'is not a duration such as 5s, 500ms or 1m' : null
  if (spec.format === 'topic') {
    const plain = value.replace(/\$\{[^}]*\}/g, 'x')
    const err = topicNameError(plain)
    return err === null ? null : `is not a topic name (${err})`
  }
  if (spec.format === 'url') {
    try {
      const url = new URL(value)
      return url.protocol === 'http:' || url.protocol === 'https:' ? null : 'must be an http:// or https:// URL'
    } catch {
      return 'is not a URL'
    }
  }
  return null
}

/**
 * Returns `given` checked against `specs`, with defaults filled in; throws a
 * {@link MissingParameterError} (107) or {@link WrongTypeError} (108) naming `what` (e.g.
 * `action republish`) and the parameter.
 */
export function checkParams (specs: ParamSpecs, given: unknown, what: string): Record<string, unknown> {
  if (given !== undefined && (typeof given !== 'object' || given === null || Array.isArray(given))) {
    throw new WrongTypeError(`${what}: parameters must be an object, got ${typeOf(given)}`)
  }
  const out: Record<string, unknown> = { ...(given as Record<string, unknown> | undefined) }
  for (const [name, spec] of Object.entries(specs)) {
    const value = out[name]
    if (value === undefined || value === null) {
      if (spec.default !== undefined) out[name] = structuredClone(spec.default)
      else if (spec.required) throw new MissingParameterError(`${what}: missing parameter ${name} (${spec.description})`)
      else delete out[name]
      continue
    }
    if (!hasType(spec, value)) {
      throw new WrongTypeError(`${what}: parameter ${name} must be ${/^[aeiou]/.test(spec.type) ? 'an' : 'a'} ${spec.type}, got ${typeOf(value)}`)
    }
    if (spec.enum !== undefined && !spec.enum.includes(value)) {
      throw new WrongTypeError(`${what}: parameter ${name} must be one of ${spec.enum.map(v => JSON.stringify(v)).join(', ')}, got ${JSON.stringify(value)}`)
    }
    const bad = formatError(spec, value)
    if (bad !== null) throw new WrongTypeError(`${what}: parameter ${name} ${bad}`)
  }
  return out
}

/**
 * The milliseconds of a `duration` param's value: a number is milliseconds, and so is text of
 * digits only (`"5000"`, as a form sends a stored number back); other text is a duration such
 * as `5s`, `1m30s`, `500ms` (node/config's units). Undefined when it is none of these.
 */
export function paramDuration (value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined
  if (typeof value !== 'string') return undefined
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text)
  return parseDuration(text)
}
