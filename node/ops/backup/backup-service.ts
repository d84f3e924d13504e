/**
 * Data export and import in EMQ X 4.4's backup JSON (emqx_mgmt_data_backup): the files under
 * `<node.data_dir>/backup/`, what `starling-ctl data export|import` and the API's
 * `/data/export`, `/data/import`, `/data/file` call. docs/backup.md is the user's page.
 *
 * Invariants:
 * - A file this node writes is mode 0600 in a directory of mode 0700: it holds password and
 *   secret hashes (and, with `withSecrets`, credentials in clear).
 * - An import checks the whole file (its shape, its version, every section's entries) before
 *   it writes anything: a malformed file is refused (107/108/109) and changes nothing.
 * - Only names of the form `<name>.json` without a directory are looked up in the backup
 *   directory; the API reaches no other file. A path is read only for starling-ctl, whose
 *   user runs on the node's machine.
 */
import { chmod, mkdir, readdir, readFile, stat, unlink, writeFile } from 'node:fs/promises'
import { basename, isAbsolute, join } from 'node:path'
import { MissingParameterError, NotFoundError, NotJsonError, WrongTypeError } from '../../errors.js'
import { checkJsonDepth } from '../../json-depth.js'
import { VERSION } from '../../version.js'
import type { BackupSections, ExportContext, ImportContext, SectionPlan, SkippedEntry } from './sections.js'
import { describe } from './entries.js'

/** The `version` an export writes: the EMQ X backup format it follows. */
export const BACKUP_FORMAT_VERSION = '4.4'

/** The versions an import takes: EMQ X 4.0 to 4.4 (ours are 4.4). */
const IMPORTABLE = /^4\.[0-4](\.\d+)?$/

/** EMQ X 4.4's order of a backup's keys (`schemas` as its Enterprise edition wrote them). */
const KEY_ORDER = ['version', 'rules', 'resources', 'blacklist', 'apps', 'users', 'auth_mnesia', 'acl_mnesia', 'schemas', 'date']

/** A backup file's name: `<name>.json`, no directory, no leading dot. */
const FILE_NAME = /^[^/\\.][^/\\]*\.json$/

/** What the service uses: where the files go, the sections, the node's name. */
export interface BackupComponents {
  /** `<node.data_dir>/backup`. */
  dir: string
  sections: BackupSections
  /** The node's name (in a listing). */
  node: string
}

/** A backup file as `GET /data/export` lists it and `POST /data/export` answers it (EMQ X's fields). */
export interface BackupFileInfo {
  filename: string
  size: number
  /** `YYYY-M-D H:MM:S`, local time (EMQ X's form). */
  created_at: string
  node: string
}

/** What an import did: the counts by key, the entries skipped and why, remarks. */
export interface ImportReport {
  version: string
  imported: Record<string, number>
  skipped: SkippedEntry[]
  notes: string[]
}

/** Where an import reads from: a file of the backup directory, a path (starling-ctl only), or the content itself (the API). */
export type ImportSource = { filename: string } | { path: string } | { content: unknown }

/** Writes a new backup file of every section; answers its name, size and time. */
export async function exportData (c: BackupComponents, ctx: ExportContext, now = new Date()): Promise<BackupFileInfo & { path: string }> {
  const data: Record<string, unknown> = { version: BACKUP_FORMAT_VERSION }
  for (const section of c.sections.list()) {
    // two sections may write one key (svc_auth_clientid and svc_auth_username: auth_mnesia)
    for (const [key, entries] of Object.entries(section.export(ctx))) data[key] = [...(data[key] as unknown[] ?? []), ...entries]
  }
  data.date = formatDate(now, true)
  data.exported_by = `Starling ${VERSION}`
  const ordered: Record<string, unknown> = {}
  for (const key of [...KEY_ORDER, ...Object.keys(data)]) if (key in data && !(key in ordered)) ordered[key] = data[key]
  await mkdir(c.dir, { recursive: true, mode: 0o700 })
  const base = `emqx-export-${now.getFullYear()}-${now.getMonth() + 1}-${now.getDate()}-${now.getHours()}-${now.getMinutes()}-${now.getSeconds()}`
  const text = JSON.stringify(ordered, null, 2) + '\n'
  for (let n = 1; ; n++) {
    const filename = n === 1 ? `${base}.json` : `${base}-${n}.json`
    const path = join(c.dir, filename)
    try {
      await writeFile(path, text, { mode: 0o600, flag: 'wx' })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue
      throw err
    }
    await chmod(path, 0o600) // the mode above is before the umask; this is after
    return { ...await infoOf(c, filename), path }
  }
}

/** The backup files of this node, oldest first. */
export async function listBackups (c: BackupComponents): Promise<BackupFileInfo[]> {
  let names: string[]
  try {
    names = await readdir(c.dir)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  const infos = await Promise.all(names.filter(n => FILE_NAME.test(n)).map(async n => await infoOf(c, n).catch(() => undefined)))
  return infos.filter((i): i is BackupFileInfo => i !== undefined).sort((a, b) => a.created_at < b.created_at ? -1 : 1)
}

/** `GET /data/file/:filename`: the file's name and content (EMQ X's `{filename, file}`). */
export async function readBackup (c: BackupComponents, filename: string): Promise<{ filename: string, file: string }> {
  return { filename, file: await readFile(fileOf(c, filename), 'utf8').catch(notFound(filename)) }
}

/** `DELETE /data/file/:filename`. */
export async function deleteBackup (c: BackupComponents, filename: string): Promise<void> {
  await unlink(fileOf(c, filename)).catch(notFound(filename))
}

/** `POST /data/file`: stores an uploaded backup (JSON, a new name) for a later import. */
export async function uploadBackup (c: BackupComponents, filename: string, file: string): Promise<void> {
  parseBackup(file)
  await mkdir(c.dir, { recursive: true, mode: 0o700 })
  try {
    await writeFile(fileOf(c, filename), file, { mode: 0o600, flag: 'wx' })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new WrongTypeError(`backup file ${filename} already exists; delete it first (DELETE /data/file/${filename})`)
    throw err
  }
}

/**
 * Imports a backup: reads and parses it, checks its version and every section's entries,
 * then writes; `env` is EMQ X's `--env` (`{"auth.mnesia.as": "clientid"}`).
 */
export async function importData (c: BackupComponents, source: ImportSource, env: unknown = {}, nowMs = Date.now()): Promise<ImportReport> {
  const file = 'content' in source
    ? checkedFile(source.content)
    : parseBackup(await readFile('path' in source ? pathOf(source.path) : fileOf(c, source.filename), 'utf8')
      .catch(notFound('path' in source ? source.path : source.filename)))
  const version = versionOf(file.version)
  const ctx: ImportContext = { version, env: envOf(env, file), nowMs }
  const plans: SectionPlan[] = []
  for (const section of c.sections.list()) plans.push(await section.check(file, ctx))
  for (const plan of plans) await plan.apply()
  return {
    version,
    imported: Object.assign({}, ...plans.map(p => p.counts)),
    skipped: plans.flatMap(p => p.skipped),
    notes: plans.flatMap(p => p.notes)
  }
}

/** The text as a backup object: 109 when not JSON, 108 when not an object. */
export function parseBackup (text: string): Record<string, unknown> {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw new NotJsonError(`the backup file is not JSON: ${(err as Error).message}`)
  }
  return checkedFile(parsed)
}

function checkedFile (value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new WrongTypeError(`a backup must be a JSON object with "version" and the data, not ${describe(value)}`)
  }
  return checkJsonDepth(value as Record<string, unknown>, 'the backup')
}

/** The file's `version` as text; 107 without one, 108 for one Starling does not import. */
function versionOf (value: unknown): string {
  if (value === undefined || value === null) throw new MissingParameterError('missing parameter version: not an EMQ X 4 or Starling backup file')
  const version = typeof value === 'number' ? value.toFixed(1) : value
  if (typeof version !== 'string' || !IMPORTABLE.test(version)) {
    throw new WrongTypeError(`unsupported backup version ${describe(value)}: Starling imports EMQ X 4.0 to 4.4 backups (version "4.0" ... "4.4") and its own`)
  }
  return version.slice(0, 3)
}

/** `--env` merged over the file's own keys of that form (EMQ X merged them so); 108 unless an object of texts. */
function envOf (env: unknown, file: Record<string, unknown>): Record<string, string> {
  const given = typeof env === 'string' ? parseEnv(env) : env
  if (typeof given !== 'object' || given === null || Array.isArray(given)) throw new WrongTypeError(`--env must be a JSON object such as {"auth.mnesia.as":"username"}, not ${describe(env)}`)
  const out: Record<string, string> = {}
  if (typeof file['auth.mnesia.as'] === 'string') out['auth.mnesia.as'] = file['auth.mnesia.as']
  for (const [key, value] of Object.entries(given)) {
    if (typeof value !== 'string') throw new WrongTypeError(`--env ${key} must be a string, not ${describe(value)}`)
    out[key] = value
  }
  const as = out['auth.mnesia.as']
  if (as !== undefined && as !== 'username' && as !== 'clientid') throw new WrongTypeError(`auth.mnesia.as must be username or clientid, not ${describe(as)}`)
  return out
}

function parseEnv (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new NotJsonError(`--env is not JSON: ${describe(text)} (example: '{"auth.mnesia.as":"username"}')`)
  }
}

/** The path of a backup file by name; 108 for a name that is not `<name>.json`. */
function fileOf (c: BackupComponents, filename: string): string {
  if (typeof filename !== 'string' || !FILE_NAME.test(filename)) {
    throw new WrongTypeError(`backup file name must be <name>.json without a directory, not ${describe(filename)}`)
  }
  return join(c.dir, filename)
}

/** An absolute path (starling-ctl resolves relative ones against its own directory). */
function pathOf (path: string): string {
  if (typeof path !== 'string' || !isAbsolute(path)) throw new WrongTypeError(`backup path must be absolute, not ${describe(path)}`)
  return path
}

async function infoOf (c: BackupComponents, filename: string): Promise<BackupFileInfo> {
  const s = await stat(join(c.dir, filename))
  return { filename: basename(filename), size: s.size, created_at: formatDate(s.mtime, false), node: c.node }
}

function notFound (what: string): (err: NodeJS.ErrnoException) => never {
  return (err) => {
    if (err.code === 'ENOENT') throw NotFoundError.withMessage(`backup file ${what} not found; GET /data/export (or starling-ctl data list) lists them`)
    throw err
  }
}

/** `YYYY-MM-DD HH:MM:SS` (padded, the backup's `date`) or EMQ X's unpadded listing form. */
function formatDate (d: Date, padded: boolean): string {
  const p = (n: number): string => padded ? String(n).padStart(2, '0') : String(n)
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
}
