/**
 * `starling-ctl banned list|add|del`: the command table entries and the node-side handlers
 * over the banned service. EMQ X 4 had no ctl command for the banned list (only the API);
 * the shape here follows its other commands (`ok` for changes) and is in docs/banned.md.
 */
import { defineCommand, type CtlCommand } from '../control/commands.js'
import { formatTable } from '../control/format.js'
import type { ControlHandlers, ControlServer } from '../control/server.js'
import { BANNED_AS, BANNED_BY_CTL, DEFAULT_BAN_SECONDS, type BannedEntry } from './banned-entry.js'
import type { BannedService } from './banned-service.js'

const printOk = (): string => 'ok\n'

/** `banned list`: a table of the live entries. */
export const bannedListCommand = defineCommand<BannedEntry[]>({
  words: ['banned', 'list'],
  description: 'List the live entries of the banned list',
  render (entries) {
    return formatTable(entries, [
      { key: 'as' }, { key: 'who' }, { key: 'reason' }, { key: 'desc' }, { key: 'by' },
      { key: 'until', format: (until) => `${until} (${new Date(Number(until) * 1000).toISOString()})` }
    ], { empty: 'No banned entries' })
  }
})

/** `banned add <As> <Who> [--reason] [--desc] [--until]`. */
export const bannedAddCommand = defineCommand<BannedEntry>({
  words: ['banned', 'add'],
  description: 'Ban a client id, username or IP address until a time (default: 5 minutes from now)',
  args: [
    { name: 'As', description: `what Who is: ${BANNED_AS.join(', ')}` },
    { name: 'Who', description: 'the client id, username or IP address' }
  ],
  options: [
    { flags: '-r, --reason <reason>', description: 'why (the broker logs it when it refuses the client)' },
    { flags: '-d, --desc <desc>', description: 'a description' },
    { flags: '-u, --until <until>', description: `end of the ban in seconds since the epoch (default: now + ${DEFAULT_BAN_SECONDS})` }
  ],
  render: printOk
})

/** `banned del <As> <Who>`. */
export const bannedDelCommand = defineCommand<string>({
  words: ['banned', 'del'],
  description: 'Remove an entry of the banned list',
  args: [
    { name: 'As', description: `what Who is: ${BANNED_AS.join(', ')}` },
    { name: 'Who', description: 'the client id, username or IP address' }
  ],
  render: printOk
})

/** Every banned-list command, for the ctl command table. */
export const BANNED_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [bannedListCommand, bannedAddCommand, bannedDelCommand]

/** The node-side handlers over `service`. */
export function bannedHandlers (service: BannedService): ControlHandlers {
  return {
    'banned list': () => service.list(),
    'banned add': ({ args, options }) => service.add({
      as: args[0], who: args[1], reason: options.reason, desc: options.desc, until: options.until, by: BANNED_BY_CTL
    }),
    'banned del': async ({ args }) => { await service.delete(args[1], args[0]); return 'ok' }
  }
}

/** Registers the handlers on the node's control server; returns the function that removes them. */
export function registerBannedControl (node: { control: ControlServer }, service: BannedService): () => void {
  const handlers = bannedHandlers(service)
  for (const [name, handler] of Object.entries(handlers)) node.control.register(name, handler)
  return () => { for (const name of Object.keys(handlers)) node.control.unregister(name) }
}
