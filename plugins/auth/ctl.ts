/**
 * `starling-ctl clientid add|update|del|list` and `users add|update|del|list`: the command
 * table entries (client side) and the node-side handlers, which call the credential
 * services. As in EMQ X 4, changes print `ok` and `list` prints one id per line.
 *
 * The handlers exist while their plugin is loaded (the plugin registers them on load and
 * removes them on unload). The plugins' `attach` ({@link attachCredentialPlaceholders})
 * adds placeholders for the time the plugin is not loaded, so the user is told to load it
 * instead of getting "unknown command".
 */
import { defineCommand, type CtlCommand } from '../../node/control/commands.js'
import type { ControlHandlers, ControlServer } from '../../node/control/server.js'
import type { CredentialService } from './credentials.js'
import { AuthPluginNotLoadedError } from './errors.js'

/** The first word of a credential command and the plugin serving it. */
export type CredentialCommandGroup = 'clientid' | 'users'

/** Which plugin serves each command group. */
export const CREDENTIAL_PLUGINS: Readonly<Record<CredentialCommandGroup, string>> = {
  clientid: 'svc_auth_clientid',
  users: 'svc_auth_username'
}

const printOk = (): string => 'ok\n'
const printIds = (ids: string[]): string => ids.map((id) => `${id}\n`).join('')

/** The four commands of one group; `Id` is `ClientId` or `Username` (EMQ X's usage text). */
function credentialCommands (group: CredentialCommandGroup, Id: string, what: string): Array<CtlCommand<any>> {
  const plugin = CREDENTIAL_PLUGINS[group]
  return [
    defineCommand<string[]>({
      words: [group, 'list'],
      description: `List the ${what}s of ${plugin}, one per line`,
      render: printIds
    }),
    defineCommand<string>({
      words: [group, 'add'],
      description: `Add a ${what} with its password (${plugin})`,
      args: [{ name: Id, description: `the ${what}` }, { name: 'Password', description: 'its password' }],
      render: printOk
    }),
    defineCommand<string>({
      words: [group, 'update'],
      description: `Change the password of a ${what} (${plugin})`,
      args: [{ name: Id, description: `the ${what}` }, { name: 'NewPassword', description: 'the new password' }],
      render: printOk
    }),
    defineCommand<string>({
      words: [group, 'del'],
      description: `Delete a ${what} (${plugin})`,
      args: [{ name: Id, description: `the ${what}` }],
      render: printOk
    })
  ]
}

/** `clientid list|add|update|del`. */
export const CLIENTID_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = credentialCommands('clientid', 'ClientId', 'client id')
/** `users list|add|update|del`. */
export const USERS_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = credentialCommands('users', 'Username', 'username')
/** Every credential command, for the ctl command table. */
export const AUTH_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [...CLIENTID_CTL_COMMANDS, ...USERS_CTL_COMMANDS]

/** The node-side handlers of one group, over `service`. */
export function credentialHandlers (group: CredentialCommandGroup, service: CredentialService): ControlHandlers {
  return {
    [`${group} list`]: () => service.list(),
    [`${group} add`]: async ({ args }) => { await service.add(args[0], args[1]); return 'ok' },
    [`${group} update`]: async ({ args }) => { await service.update(args[0], args[1]); return 'ok' },
    [`${group} del`]: async ({ args }) => { await service.delete(args[0]); return 'ok' }
  }
}

/** Per control server: groups with placeholders attached, and groups whose plugin is loaded. */
interface ControlState { placeholders: Set<CredentialCommandGroup>, loaded: Set<CredentialCommandGroup> }
const states = new WeakMap<ControlServer, ControlState>()

function stateOf (control: ControlServer): ControlState {
  let state = states.get(control)
  if (state === undefined) states.set(control, state = { placeholders: new Set(), loaded: new Set() })
  return state
}

/**
 * Registers the "plugin not loaded" placeholders of `group` on the control server (the
 * plugins' `attach`, once at node start); loading the plugin replaces them with the real
 * handlers and unloading puts them back. Returns the function that removes them for good.
 */
export function attachCredentialPlaceholders (control: ControlServer, group: CredentialCommandGroup): () => void {
  const state = stateOf(control)
  if (state.placeholders.has(group)) return () => {}
  state.placeholders.add(group)
  // a plugin loaded before this call keeps its real handlers
  if (!state.loaded.has(group)) registerAll(control, placeholders(group))
  return () => {
    if (!state.placeholders.delete(group)) return
    if (!state.loaded.has(group)) for (const name of Object.keys(placeholders(group))) control.unregister(name)
  }
}

/** Attaches the placeholders of both groups (for a node started without the plugin manager). */
export function registerAuthControl (node: { control: ControlServer }): void {
  for (const group of Object.keys(CREDENTIAL_PLUGINS) as CredentialCommandGroup[]) attachCredentialPlaceholders(node.control, group)
}

/**
 * Registers the handlers of `group` over `service` (a plugin being loaded), replacing the
 * placeholders if any. Returns the function that undoes it (the plugin's unload).
 */
export function registerCredentialControl (control: ControlServer, group: CredentialCommandGroup, service: CredentialService): () => void {
  const state = stateOf(control)
  if (state.loaded.has(group)) throw new Error(`the ${group} commands are already registered: ${CREDENTIAL_PLUGINS[group]} is loaded`)
  const handlers = credentialHandlers(group, service)
  if (state.placeholders.has(group)) for (const name of Object.keys(handlers)) control.unregister(name)
  try {
    registerAll(control, handlers)
  } catch (err) {
    if (state.placeholders.has(group)) registerAll(control, placeholders(group))
    throw err
  }
  state.loaded.add(group)
  return () => {
    state.loaded.delete(group)
    for (const name of Object.keys(handlers)) control.unregister(name)
    if (state.placeholders.has(group)) registerAll(control, placeholders(group))
  }
}

function placeholders (group: CredentialCommandGroup): ControlHandlers {
  const refuse = (): never => { throw new AuthPluginNotLoadedError(CREDENTIAL_PLUGINS[group]) }
  return { [`${group} list`]: refuse, [`${group} add`]: refuse, [`${group} update`]: refuse, [`${group} del`]: refuse }
}

/** Registers all of `handlers` or, when one name is taken, none of them (and throws). */
function registerAll (control: ControlServer, handlers: ControlHandlers): void {
  const done: string[] = []
  try {
    for (const [name, handler] of Object.entries(handlers)) {
      // `add`/`update`: the password (second argument) never reaches the control socket's debug log
      control.register(name, handler, { secretArgs: [1] })
      done.push(name)
    }
  } catch (err) {
    for (const name of done) control.unregister(name)
    throw err
  }
}
