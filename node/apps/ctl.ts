/**
 * `starling-ctl mgmt list|insert|lookup|update|delete`: API applications, as EMQ X 4's
 * `emqx_ctl mgmt` (`insert` prints the new AppSecret).
 */
import { defineCommand, type CtlCommand } from '../control/commands.js'
import { formatTable, type TableColumn } from '../control/format.js'
import type { ControlServer } from '../control/server.js'
import { WrongTypeError } from '../errors.js'
import type { App, AppsService, NewApp } from './apps.js'
import { REDACTED } from '../config/index.js'

// EMQ X printed the secret here; Starling shows it once, at `mgmt insert` (docs/cli.md)
const appColumns: ReadonlyArray<TableColumn<App>> = [
  { key: 'app_id' }, { key: 'app_id', header: 'secret', format: () => REDACTED }, { key: 'name' }, { key: 'desc' },
  { key: 'status', format: (v: unknown) => String(v) },
  { key: 'expired', format: (v: unknown) => v === null ? 'undefined' : String(v) }
]

export const mgmtListCommand = defineCommand<App[]>({
  words: ['mgmt', 'list'],
  description: 'List the API applications',
  render: (apps) => formatTable(apps, appColumns, { empty: 'No applications' })
})

export const mgmtInsertCommand = defineCommand<NewApp>({
  words: ['mgmt', 'insert'],
  description: 'Add an API application and print its generated secret',
  args: [{ name: 'AppId', description: 'application id (the Basic auth user name)' }, { name: 'Name', description: 'application name' }],
  options: [{ flags: '-d, --desc <desc>', description: 'description' }],
  render: (app) => `AppSecret: ${app.secret}\n`
})

export const mgmtLookupCommand = defineCommand<App>({
  words: ['mgmt', 'lookup'],
  description: 'Show an API application',
  args: [{ name: 'AppId', description: 'application id' }],
  render: (app) => formatTable([app], appColumns)
})

export const mgmtUpdateCommand = defineCommand<App>({
  words: ['mgmt', 'update'],
  description: 'Enable (true) or disable (false) an API application',
  args: [{ name: 'AppId', description: 'application id' }, { name: 'status', description: 'true or false' }],
  render: () => 'update successfully.\n'
})

export const mgmtDeleteCommand = defineCommand<null>({
  words: ['mgmt', 'delete'],
  description: 'Delete an API application (not the default one)',
  args: [{ name: 'AppId', description: 'application id' }],
  render: () => 'ok\n'
})

/** Every `mgmt` command, for the ctl command table. */
export const MGMT_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [mgmtListCommand, mgmtInsertCommand, mgmtLookupCommand, mgmtUpdateCommand, mgmtDeleteCommand]

/** Registers the node-side `mgmt` handlers; returns a function that removes them. */
export function registerAppsControl (node: { control: ControlServer }, apps: AppsService): () => void {
  const handlers: Record<string, (req: { args: string[], options: Record<string, string | boolean> }) => unknown> = {
    'mgmt list': () => apps.list(),
    'mgmt insert': ({ args, options }) => apps.add({ app_id: args[0], name: args[1], desc: typeof options.desc === 'string' ? options.desc : '' }),
    // an unknown id is 105, as in the API (GET /api/v3/apps/:appid)
    'mgmt lookup': ({ args }) => apps.get(args[0]),
    'mgmt update': ({ args }) => {
      if (args[1] !== 'true' && args[1] !== 'false') throw new WrongTypeError(`status must be true or false, got '${args[1]}'`)
      return apps.update(args[0], { status: args[1] === 'true' })
    },
    'mgmt delete': async ({ args }) => { await apps.delete(args[0]); return null }
  }
  for (const [name, handler] of Object.entries(handlers)) node.control.register(name, handler)
  return () => { for (const name of Object.keys(handlers)) node.control.unregister(name) }
}
