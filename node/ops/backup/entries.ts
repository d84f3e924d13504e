/**
 * Reading a backup file's entries: each section checks its own with these, so that a
 * malformed entry is refused with the file's key, the entry's index and the field
 * (`blacklist[2].who must be an object ...`), as code 108 (107 for a missing field).
 */
import { MissingParameterError, WrongTypeError } from '../../errors.js'

/** One entry of a section: an object. */
export type BackupEntry = Readonly<Record<string, unknown>>

/** The entries under `key`: absent or null is none; anything but an array of objects is 108. */
export function entriesOf (file: Readonly<Record<string, unknown>>, key: string): BackupEntry[] {
  const value = file[key]
  if (value === undefined || value === null) return []
  if (!Array.isArray(value)) throw new WrongTypeError(`"${key}" must be an array, not ${describe(value)}`)
  value.forEach((entry, i) => {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw new WrongTypeError(`${key}[${i}] must be an object, not ${describe(entry)}`)
    }
  })
  return value as BackupEntry[]
}

/** Where an entry is, for messages: `apps[3]`. */
export function at (key: string, index: number): string {
  return `${key}[${index}]`
}

/** A required text field; 107 when missing, 108 when not a non-empty string. */
export function requiredText (entry: BackupEntry, field: string, where: string): string {
  const value = entry[field]
  if (value === undefined || value === null) throw new MissingParameterError(`missing parameter ${where}.${field}`)
  if (typeof value !== 'string' || value === '') throw new WrongTypeError(`${where}.${field} must be a non-empty string, not ${describe(value)}`)
  return value
}

/** An optional text field (absent, null or EMQ X's `undefined` atom: `fallback`); 108 when not text. */
export function optionalText (entry: BackupEntry, field: string, where: string, fallback = ''): string {
  const value = entry[field]
  if (value === undefined || value === null || value === 'undefined') return fallback
  if (typeof value !== 'string') throw new WrongTypeError(`${where}.${field} must be a string, not ${describe(value)}`)
  return value
}

/** An optional boolean field (`true`/`false`, or EMQ X's text `"true"`/`"false"`); 108 otherwise. */
export function optionalBoolean (entry: BackupEntry, field: string, where: string, fallback: boolean): boolean {
  const value = entry[field]
  if (value === undefined || value === null) return fallback
  if (value === true || value === 'true') return true
  if (value === false || value === 'false') return false
  throw new WrongTypeError(`${where}.${field} must be true or false, not ${describe(value)}`)
}

/** An optional object field; 108 when not an object. */
export function optionalObject (entry: BackupEntry, field: string, where: string): Record<string, unknown> {
  const value = entry[field]
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value)) throw new WrongTypeError(`${where}.${field} must be an object, not ${describe(value)}`)
  return value as Record<string, unknown>
}

/** A value in a message: JSON, cut at 60 characters. */
export function describe (value: unknown): string {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}
