/**
 * `starling-ctl admins add|passwd|del`: the dashboard users, as EMQ X 4's `emqx_ctl admins`
 * (each prints `ok`). The handlers call the users service (users.ts); they are registered
 * while svc_dashboard is attached, loaded or not, as the users are cluster-wide data.
 */
import { defineCommand, type CtlCommand } from '../../node/control/commands.js'
import type { ControlServer } from '../../node/control/server.js'
import type { DashboardUsers } from './users.js'

const printOk = (): string => 'ok\n'

/** `admins add <Username> <Password> [<Tags>]`. */
export const adminsAddCommand = defineCommand<string>({
  words: ['admins', 'add'],
  description: 'Add a dashboard user',
  args: [
    { name: 'Username', description: 'the user name' },
    { name: 'Password', description: 'its password' },
    { name: 'Tags', description: 'its tags (free text)', optional: true }
  ],
  render: printOk
})

/** `admins passwd <Username> <Password>`. */
export const adminsPasswdCommand = defineCommand<string>({
  words: ['admins', 'passwd'],
  description: 'Set the password of a dashboard user (ends its sessions)',
  args: [{ name: 'Username', description: 'the user name' }, { name: 'Password', description: 'the new password' }],
  render: printOk
})

/** `admins del <Username>`. */
export const adminsDelCommand = defineCommand<string>({
  words: ['admins', 'del'],
  description: 'Delete a dashboard user (not the default one)',
  args: [{ name: 'Username', description: 'the user name' }],
  render: printOk
})

/** Every `admins` command, for the ctl command table (svc_dashboard's `ctl`). */
export const ADMINS_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [adminsAddCommand, adminsPasswdCommand, adminsDelCommand]

/** Registers the node-side handlers over `users`; returns the function that removes them. */
export function registerAdminsControl (control: ControlServer, users: DashboardUsers): () => void {
  const handlers: Record<string, (req: { args: string[] }) => Promise<string>> = {
    'admins add': async ({ args }) => { await users.add(args[0], args[1], args[2] ?? ''); return 'ok' },
    'admins passwd': async ({ args }) => { await users.setPassword(args[0], args[1]); return 'ok' },
    'admins del': async ({ args }) => { await users.delete(args[0]); return 'ok' }
  }
  // the passwords (second argument) never reach the control socket's debug log
  for (const [name, handler] of Object.entries(handlers)) control.register(name, handler, { secretArgs: [1] })
  return () => { for (const name of Object.keys(handlers)) control.unregister(name) }
}
