/**
 * Data export and import (EMQ X 4.4's emqx_mgmt_api_data, same paths and fields):
 * `POST|GET /data/export`, `POST /data/import`, `GET|DELETE /data/file/:filename`,
 * `POST /data/file`. Thin: the backup service (node/ops/backup/) does the work, the one
 * `starling-ctl data` uses too. docs/backup.md says what a backup carries.
 */
import { defineRoutes, type RouteDef } from '../route-table.js'
import { WrongTypeError } from '../../node/errors.js'
import { downloadBackup, exportOnNode, importOnNode, listExports, removeBackup, storeUpload } from '../../node/ops/backup/ops.js'

/** The data export and import endpoints. */
export const DATA_ROUTES: RouteDef[] = defineRoutes([
  {
    name: 'export',
    method: 'POST',
    path: '/data/export',
    descr: 'Export data (credentials in resource configs masked unless {"with_secrets": true})',
    body: { type: 'object', properties: { with_secrets: { type: 'boolean', description: 'credentials in resource configs and action params in clear' } } },
    handler: async (req) => ({ data: await exportOnNode(req.node, req.body?.with_secrets === true) })
  },
  {
    name: 'list_exported',
    method: 'GET',
    path: '/data/export',
    descr: 'List exported files',
    handler: async (req) => ({ data: await listExports(req.node) })
  },
  {
    name: 'import',
    method: 'POST',
    path: '/data/import',
    descr: 'Import data: {"filename": ..., "node": ...} of an exported or uploaded file, or the backup itself as the body',
    handler: async (req) => {
      const body: unknown = req.body
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        throw new WrongTypeError('the body must be {"filename": "<name>.json"} or a backup object')
      }
      const { filename, node } = body as { filename?: unknown, node?: unknown }
      if (filename === undefined) return { data: await importOnNode(req.node, { content: body }) }
      if (typeof filename !== 'string') throw new WrongTypeError('filename must be a string')
      if (node !== undefined && typeof node !== 'string') throw new WrongTypeError('node must be a node name')
      return { data: await importOnNode(req.node, { filename }, node) }
    }
  },
  {
    name: 'download',
    method: 'GET',
    path: '/data/file/:filename',
    descr: 'Download data file',
    handler: async (req) => ({ data: await downloadBackup(req.node, req.params.filename) })
  },
  {
    name: 'upload',
    method: 'POST',
    path: '/data/file',
    descr: 'Upload data file',
    body: {
      type: 'object',
      properties: {
        filename: { type: 'string', description: '<name>.json; default emqx-export-<time>.json' },
        file: { type: 'string', description: 'the backup, JSON text' }
      },
      required: ['file']
    },
    handler: async (req) => {
      const now = new Date()
      const filename: string = req.body.filename ??
        `emqx-export-${now.getFullYear()}-${now.getMonth() + 1}-${now.getDate()}-${now.getHours()}-${now.getMinutes()}-${now.getSeconds()}.json`
      await storeUpload(req.node, filename, req.body.file)
      return { data: { node: req.node.name } }
    }
  },
  {
    name: 'delete',
    method: 'DELETE',
    path: '/data/file/:filename',
    descr: 'Delete data file',
    handler: async (req) => { await removeBackup(req.node, req.params.filename); return undefined }
  }
])
