/**
 * `<node.data_dir>/loaded_plugins`: which plugins a node loads at start, in EMQ X 4's
 * format, one Erlang term per line:
 *
 * ```
 * {svc_management, true}.
 * {svc_retainer, false}.
 * ```
 *
 * EMQ X 3's form (a bare `svc_retainer.` meaning loaded) and `%` comments are read too.
 * The manager rewrites the whole file after each load and unload.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { LoadedPluginsFileError } from './errors.js'

/** The file's name under `node.data_dir`. */
export const LOADED_PLUGINS_FILE = 'loaded_plugins'

/** One entry: a plugin name and whether it is loaded at start. */
export interface LoadedPluginEntry {
  name: string
  loaded: boolean
}

const TUPLE = /^\{\s*([A-Za-z][A-Za-z0-9_]*)\s*,\s*(true|false)\s*\}\s*\.$/
const BARE = /^([A-Za-z][A-Za-z0-9_]*)\s*\.$/

/**
 * Parses the file's text. Later entries for the same name win. Throws a
 * {@link LoadedPluginsFileError} naming `source` and the line for anything else.
 */
export function parseLoadedPlugins (text: string, source: string): LoadedPluginEntry[] {
  const byName = new Map<string, boolean>()
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const line = stripComment(lines[i]).trim()
    if (line === '') continue
    const tuple = TUPLE.exec(line)
    const bare = tuple === null ? BARE.exec(line) : null
    if (tuple === null && bare === null) {
      throw new LoadedPluginsFileError(`${source}:${i + 1}: cannot read ${JSON.stringify(lines[i].trim())}; ` +
        'write one plugin per line as {svc_name, true}. or {svc_name, false}.')
    }
    if (tuple !== null) byName.set(tuple[1], tuple[2] === 'true')
    else byName.set((bare as RegExpExecArray)[1], true)
  }
  return [...byName].map(([name, loaded]) => ({ name, loaded }))
}

/** The file's text for `entries`, in the given order. */
export function formatLoadedPlugins (entries: readonly LoadedPluginEntry[]): string {
  return entries.map((e) => `{${e.name}, ${String(e.loaded)}}.\n`).join('')
}

/** Reads and parses the file; `undefined` when it does not exist. */
export function readLoadedPlugins (file: string): LoadedPluginEntry[] | undefined {
  if (!existsSync(file)) return undefined
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new LoadedPluginsFileError(`cannot read ${file}: ${(err as Error).message}`, err)
  }
  return parseLoadedPlugins(text, file)
}

/**
 * Writes the file atomically (a temporary file renamed over it), so a crash never leaves
 * a half-written list behind.
 */
export function writeLoadedPlugins (file: string, entries: readonly LoadedPluginEntry[]): void {
  const tmp = `${file}.tmp`
  try {
    writeFileSync(tmp, formatLoadedPlugins(entries), { mode: 0o600 })
    renameSync(tmp, file)
  } catch (err) {
    throw new LoadedPluginsFileError(`cannot write ${file}: ${(err as Error).message}; ` +
      'the change takes effect now but will not survive a restart', err)
  }
}

/** The line without an Erlang `%` comment. Names never contain `%`. */
function stripComment (line: string): string {
  const at = line.indexOf('%')
  return at === -1 ? line : line.slice(0, at)
}
