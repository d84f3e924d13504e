/**
 * The `key = value` file format of `etc/starling.conf` and `etc/plugins/*.conf`, as
 * EMQ X 4 wrote its cuttlefish files:
 *
 * - one `key = value` per line; spaces around `=` and at both ends are ignored;
 * - a line whose first non-blank character is `#` is a comment (`##` by convention);
 *   there are no end-of-line comments, because values such as topic filters contain `#`;
 * - a value in double quotes is taken without them (`""` is an explicit empty value);
 *   otherwise the value is the rest of the line, `=` included;
 * - a key set twice keeps the later value (so an appended line overrides the shipped one).
 */
import { existsSync, readFileSync } from 'node:fs'
import { isAbsolute, relative, resolve } from 'node:path'
import { ConfigError } from './config-error.js'

/** One `key = value` line. */
export interface ConfEntry {
  readonly key: string
  readonly value: string
  /** 1-based line number. */
  readonly line: number
  /** `<file>:<line>`, for error messages. */
  readonly source: string
}

const KEY = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/

/**
 * Parses the text of a config file. `fileName` is how errors name the file
 * (`etc/starling.conf`). A line that is not a comment, blank or `key = value` is a
 * ConfigError with the line number: thrown, or added to `collect` when given.
 */
export function parseConfText (text: string, fileName: string, collect?: ConfigError[]): ConfEntry[] {
  const entries: ConfEntry[] = []
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const trimmed = lines[i].trim()
    if (trimmed === '' || trimmed.startsWith('#')) continue
    const source = `${fileName}:${i + 1}`
    const eq = trimmed.indexOf('=')
    const key = eq === -1 ? '' : trimmed.slice(0, eq).trim()
    if (eq === -1 || !KEY.test(key)) {
      const err = new ConfigError(`malformed line ${JSON.stringify(clip(trimmed))}: expected key = value`,
        { source, value: trimmed, allowed: 'key = value' })
      if (collect === undefined) throw err
      collect.push(err)
      continue
    }
    entries.push({ key, value: unquote(trimmed.slice(eq + 1).trim()), line: i + 1, source })
  }
  return entries
}

/** Where a config file is and what to do when it is missing. */
export interface ConfFileLocation {
  /** The path as given; relative paths are relative to `cwd`. */
  readonly path: string
  /** Directory that relative paths and error messages are relative to. */
  readonly cwd: string
  /** When true a missing file is an error; when false it means "no settings". */
  readonly required: boolean
  /** Who asked for the file, for the not-found message (`STARLING_CONFIG`). */
  readonly givenBy?: string
  /** Where malformed lines go instead of being thrown (so that one start reports them all). */
  readonly collect?: ConfigError[]
}

/**
 * Reads and parses a config file. Errors name it relative to `cwd` when it lies inside
 * (`etc/starling.conf:12`), by its absolute path otherwise. A missing required file or an
 * unreadable one is a ConfigError.
 */
export function readConfFile (loc: ConfFileLocation): ConfEntry[] {
  const abs = resolve(loc.cwd, loc.path)
  const shown = displayPath(loc.cwd, abs)
  if (!existsSync(abs)) {
    if (!loc.required) return []
    const by = loc.givenBy === undefined ? '' : ` (given by ${loc.givenBy})`
    throw new ConfigError(`config file not found${by}`, { source: shown, value: loc.path, allowed: 'an existing file' })
  }
  let text: string
  try {
    text = readFileSync(abs, 'utf8')
  } catch (err) {
    throw new ConfigError(`cannot read config file: ${(err as Error).message}`, { source: shown, value: loc.path })
  }
  return parseConfText(text, shown, loc.collect)
}

/** `abs` relative to `cwd` when inside it, else as is. */
export function displayPath (cwd: string, abs: string): string {
  const rel = relative(cwd, abs)
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : abs
}

function unquote (value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value
}

function clip (s: string): string {
  return s.length > 60 ? `${s.slice(0, 57)}...` : s
}
