/**
 * Data export and import for the API and starling-ctl: node operations `data.export`,
 * `data.list`, `data.read`, `data.delete`, `data.upload`, `data.import` over the backup
 * service, the service functions the `/data/...` handlers call, and the `data ...` commands.
 * Files are per node (each node's `data/backup/`); the data they carry is cluster-wide, so an
 * import on any node reaches every node.
 */
import { existsSync } from 'node:fs'
import type { StarlingNode } from '../../node.js'
import { resolvePath } from '../../config/index.js'
import { defineCommand, formatTable, type ControlServer, type CtlCommand } from '../../control/index.js'
import {
  deleteBackup, exportData, importData, listBackups, readBackup, uploadBackup,
  type BackupComponents, type BackupFileInfo, type ImportReport, type ImportSource
} from './backup-service.js'
import type { BackupSections } from './sections.js'

/** What the service functions use of the node: its RPC and its name. */
export type DataComponents = Pick<StarlingNode, 'rpc' | 'name'>

/** `POST /data/export`: a new export on this node. */
export async function exportOnNode (node: DataComponents, withSecrets = false): Promise<BackupFileInfo> {
  const { path: _path, ...info } = await node.rpc.call<BackupFileInfo & { path: string }>(node.name, 'data.export', { withSecrets })
  return info
}

/** `GET /data/export`: the backup files of every running node. */
export async function listExports (node: DataComponents): Promise<BackupFileInfo[]> {
  const answers = await node.rpc.callAll<BackupFileInfo[]>('data.list')
  return answers.flatMap(a => a.ok ? a.result : [])
}

/** `POST /data/import`: a file of `target` (default this node) or the content itself. */
export async function importOnNode (node: DataComponents, source: ImportSource, target?: string): Promise<ImportReport> {
  return await node.rpc.call<ImportReport>(target ?? node.name, 'data.import', { source })
}

/** `GET /data/file/:filename`. */
export async function downloadBackup (node: DataComponents, filename: string): Promise<{ filename: string, file: string }> {
  return await node.rpc.call(node.name, 'data.read', { filename })
}

/** `DELETE /data/file/:filename`. */
export async function removeBackup (node: DataComponents, filename: string): Promise<void> {
  await node.rpc.call(node.name, 'data.delete', { filename })
}

/** `POST /data/file`. */
export async function storeUpload (node: DataComponents, filename: string, file: string): Promise<void> {
  await node.rpc.call(node.name, 'data.upload', { filename, file })
}

const printImport = (report: ImportReport): string => {
  const imported = Object.entries(report.imported).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(', ')
  return [
    'The data has been imported successfully.',
    `Imported (EMQ X ${report.version} format): ${imported === '' ? 'nothing' : imported}`,
    ...report.skipped.map(s => `Skipped ${s.section} ${s.entry}: ${s.reason}`),
    ...report.notes.map(n => `Note: ${n}`)
  ].join('\n') + '\n'
}

/** `data export [--with-secrets]`. */
export const dataExportCommand = defineCommand<BackupFileInfo & { path: string }>({
  words: ['data', 'export'],
  description: 'Export rules, resources, schemas, banned, apps, dashboard users and the built-in auth tables to data/backup/ (EMQ X 4.4 JSON, mode 0600)',
  options: [{ flags: '--with-secrets', description: 'write credentials in resource configs and action params in clear (masked by default)' }],
  render: (r) => `The data has been successfully exported to ${r.path}.\n`
})

/** `data import <File> [--env <json>]`. */
export const dataImportCommand = defineCommand<ImportReport>({
  words: ['data', 'import'],
  description: 'Import an EMQ X 4.0-4.4 or Starling backup: a path, or a file name of data/backup/',
  args: [{ name: 'File', description: 'the backup file' }],
  options: [{ flags: '--env <json>', description: 'EMQ X\'s overrides, e.g. \'{"auth.mnesia.as":"clientid"}\' for a 4.0-4.2 auth_mnesia table' }],
  timeoutMs: 120_000,
  // a path (or a file where starling-ctl runs) is read by the node: made absolute here; a bare name is data/backup/'s
  prepare: (invocation, io) => ({ ...invocation, args: invocation.args.map(a => a.includes('/') || existsSync(io.resolve(a)) ? io.resolve(a) : a) }),
  render: printImport
})

/** `data list`. */
export const dataListCommand = defineCommand<BackupFileInfo[]>({
  words: ['data', 'list'],
  description: 'List the backup files of data/backup/',
  render: (files) => formatTable(files, [{ key: 'filename' }, { key: 'size' }, { key: 'created_at' }], { empty: 'No backup files' })
})

/** The `data` commands, for the ctl command table. */
export const DATA_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [dataExportCommand, dataImportCommand, dataListCommand]

/** The components of this node's backup service. */
export function backupComponentsOf (node: Pick<StarlingNode, 'config' | 'name'>, sections: BackupSections): BackupComponents {
  return { dir: resolvePath(node.config, 'node.data_dir') + '/backup', sections, node: node.name }
}

/** Registers the `data.*` operations and the `data` commands; returns the function that removes them. */
export function registerDataOperations (node: Pick<StarlingNode, 'rpc' | 'config' | 'name'> & { control: ControlServer }, sections: BackupSections): () => void {
  const c = backupComponentsOf(node, sections)
  const operations: Record<string, (args: any) => unknown> = {
    'data.export': async (args: { withSecrets?: boolean }) => await exportData(c, { withSecrets: args.withSecrets === true }),
    'data.list': async () => await listBackups(c),
    'data.read': async (args: { filename: string }) => await readBackup(c, args.filename),
    'data.delete': async (args: { filename: string }) => { await deleteBackup(c, args.filename) },
    'data.upload': async (args: { filename: string, file: string }) => { await uploadBackup(c, args.filename, args.file) },
    'data.import': async (args: { source: ImportSource, env?: unknown }) => await importData(c, args.source, args.env)
  }
  for (const [name, op] of Object.entries(operations)) node.rpc.register(name, op)
  const handlers: Record<string, (req: { args: string[], options: Record<string, string | boolean> }) => unknown> = {
    'data export': async ({ options }) => await exportData(c, { withSecrets: options.withSecrets === true }),
    'data list': async () => await listBackups(c),
    'data import': async ({ args, options }) => {
      const file = args[0]
      const source: ImportSource = file.startsWith('/') ? { path: file } : { filename: file }
      return await importData(c, source, options.env ?? {})
    }
  }
  for (const [name, handler] of Object.entries(handlers)) node.control.register(name, handler)
  return () => {
    for (const name of Object.keys(operations)) node.rpc.unregister(name)
    for (const name of Object.keys(handlers)) node.control.unregister(name)
  }
}
