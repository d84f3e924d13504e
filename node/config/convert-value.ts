/**
 * Turns the text of one key into its typed value by the key's spec, and back into text.
 * One place decides what each type accepts, so the error, the docs and the API agree.
 */
import { ConfigError } from './config-error.js'
import type { ConfigValue, KeySpec } from './schema-types.js'
import {
  formatDuration, formatPercent, formatSize, parseAddress, parseBool, parseDuration, parseFloatValue,
  parseInteger, parsePercent, parseSize, type ListenerAddress
} from './value-types.js'

/**
 * The typed value of `raw` for a key, or a ConfigError naming `key`, `raw`, what the
 * spec allows and `source` (`etc/starling.conf:12`, `environment STARLING_X`).
 */
export function convertValue (key: string, spec: KeySpec, raw: string, source: string): ConfigValue {
  const value = parseBySpec(spec, raw.trim())
  if (value === undefined) throw ConfigError.badValue(key, raw, allowedText(spec), source)
  return value
}

function parseBySpec (spec: KeySpec, s: string): ConfigValue | undefined {
  switch (spec.type) {
    case 'string':
      if (s === '') return spec.allowEmpty === true ? s : undefined
      return spec.pattern === undefined || spec.pattern.test(s) ? s : undefined
    case 'path':
      return s === '' ? undefined : s
    case 'enum':
      return spec.values.includes(s) ? s : undefined
    case 'bool':
      return parseBool(s)
    case 'address':
      // `off` as EMQ X 4 writes a listener that is not wanted; empty, as earlier versions did
      if ((s === '' || s === 'off') && spec.optional === true) return null
      return parseAddress(s)
    case 'int':
      return inRange(parseInteger(s), spec.min, spec.max)
    case 'float':
      return inRange(parseFloatValue(s), spec.min, spec.max)
    case 'duration':
      return inRange(parseDuration(s), spec.min, spec.max)
    case 'size':
      return inRange(parseSize(s), spec.min, spec.max)
    case 'percent':
      return inRange(parsePercent(s), spec.min, spec.max)
  }
}

function inRange (n: number | undefined, min: number | undefined, max: number | undefined): number | undefined {
  if (n === undefined) return undefined
  if (min !== undefined && n < min) return undefined
  if (max !== undefined && n > max) return undefined
  return n
}

/** What a key accepts, in words: the `expected ...` part of a bad-value error and the docs' column. */
export function allowedText (spec: KeySpec): string {
  switch (spec.type) {
    case 'string':
      if (spec.hint === undefined) return spec.allowEmpty === true ? 'any text, or empty' : 'any text but empty'
      return spec.hint + (spec.allowEmpty === true ? ', or empty' : '')
    case 'path':
      return 'a file or directory path (relative paths are relative to the installation root)'
    case 'enum':
      return `one of ${spec.values.join(', ')}`
    case 'bool':
      return 'on, off, true or false'
    case 'address':
      return 'an address such as 0.0.0.0:1883, 127.0.0.1:1883, [::]:1883 or a bare port (1883; 0 = any free port)' +
        (spec.optional === true ? ', or off (or empty) to turn it off' : '')
    case 'int':
      return 'an integer' + rangeText(spec.min, spec.max, String)
    case 'float':
      return 'a number such as 0.75' + rangeText(spec.min, spec.max, String)
    case 'duration':
      return 'a duration such as 30s, 1m, 1h30m or 500ms (a bare number is seconds)' +
        rangeText(spec.min, spec.max, formatDuration)
    case 'size':
      return 'a size such as 1MB, 64KB or 1048576' + rangeText(spec.min, spec.max, formatSize)
    case 'percent':
      return 'a percentage such as 80% or 2.5%' + rangeText(spec.min ?? 0, spec.max ?? 1, formatPercent)
  }
}

function rangeText (min: number | undefined, max: number | undefined, fmt: (n: number) => string): string {
  if (min !== undefined && max !== undefined) return ` from ${fmt(min)} to ${fmt(max)}`
  if (min !== undefined) return ` of at least ${fmt(min)}`
  if (max !== undefined) return ` of at most ${fmt(max)}`
  return ''
}

/**
 * A typed value written back as config text: durations and sizes in their largest exact
 * unit (`1m`, `1MB`), booleans as `on`/`off` when the key's default is written that way
 * and `true`/`false` otherwise, an address as its canonical text, an unset optional
 * address as `''`. Parsing the result gives the same value back.
 */
export function formatValue (spec: KeySpec, value: ConfigValue): string {
  switch (spec.type) {
    case 'duration': return formatDuration(value as number)
    case 'size': return formatSize(value as number)
    case 'percent': return formatPercent(value as number)
    case 'bool': {
      const onOff = spec.default === 'on' || spec.default === 'off'
      return value === true ? (onOff ? 'on' : 'true') : (onOff ? 'off' : 'false')
    }
    case 'address': return value === null ? '' : (value as ListenerAddress).text
    default: return String(value)
  }
}
