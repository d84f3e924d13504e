/**
 * Every `starling-ctl` command: the core's, then the parts' (the rule engine's, the schema
 * registry's, the cluster's) and the plugins'. Each part defines its commands beside its code;
 * this is the one list the program is built from, and the node's control socket checks each
 * request's arguments against it.
 *
 * Loaded by `starling-ctl` on every call, so it imports the command tables' own files only
 * (words, arguments and how a result prints), never a part or a plugin: a command answers in
 * tens of milliseconds instead of loading the whole node (docs/performance.md, "starling-ctl").
 * The plugins' tables are named here one by one; test/bin/ctl-commands.test.ts checks that every
 * plugin's `ctl` is among them.
 */
import type { CtlCommand } from '../node/control/commands.js'
import { NODE_CTL_COMMANDS } from '../node/ctl-commands.js'
import { RULE_CTL_COMMANDS } from '../rules/ctl.js'
import { SCHEMA_CTL_COMMANDS } from '../rules/schemas/ctl.js'
import { CLUSTER_CTL_COMMANDS } from '../cluster/ctl.js'
import { BRIDGE_CTL_COMMANDS } from '../plugins/bridge_mqtt/ctl.js'
import { CLIENTID_CTL_COMMANDS, USERS_CTL_COMMANDS } from '../plugins/auth/ctl.js'
import { ADMINS_CTL_COMMANDS } from '../plugins/dashboard/ctl.js'

/** The plugins' commands, in the plugins' load order (plugins/index.ts). */
export const PLUGIN_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  ...BRIDGE_CTL_COMMANDS,
  ...CLIENTID_CTL_COMMANDS,
  ...USERS_CTL_COMMANDS,
  ...ADMINS_CTL_COMMANDS
]

/** The parts' commands: the rule engine's, the schema registry's, the cluster's and the plugins'. */
export const PART_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  ...RULE_CTL_COMMANDS,
  ...SCHEMA_CTL_COMMANDS,
  ...CLUSTER_CTL_COMMANDS,
  ...PLUGIN_CTL_COMMANDS
]

/** Every `starling-ctl` command, in the order `--help` lists them. */
export const ALL_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [...NODE_CTL_COMMANDS, ...PART_CTL_COMMANDS]
