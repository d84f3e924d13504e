// the command tables' own files, not the services' indexes: starling-ctl loads this list on
// every call (bin/ctl-commands.ts)
import { CTL_COMMANDS, type CtlCommand } from './control/commands.js'
import { ACL_CTL_COMMANDS } from './acl/acl-ctl.js'
import { BANNED_CTL_COMMANDS } from './banned/ctl.js'
import { PLUGIN_CTL_COMMANDS } from './plugins/control.js'
import { TRACE_CTL_COMMANDS, LOG_CTL_COMMANDS } from './trace/trace-ctl.js'
import { MGMT_CTL_COMMANDS } from './apps/ctl.js'
import { MONITORING_CTL_COMMANDS } from './ops/monitoring-ctl.js'
import { DATA_CTL_COMMANDS } from './ops/backup/ops.js'

/**
 * The core's `starling-ctl` commands, from every service of node/. The composition root
 * (bin/assemble.ts) adds the rule engine's, the schema registry's, the cluster's and the
 * plugins' (each plugin definition's `ctl`).
 */
export const NODE_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  ...CTL_COMMANDS,
  ...ACL_CTL_COMMANDS,
  ...PLUGIN_CTL_COMMANDS,
  ...BANNED_CTL_COMMANDS,
  ...TRACE_CTL_COMMANDS,
  ...LOG_CTL_COMMANDS,
  ...MGMT_CTL_COMMANDS,
  ...MONITORING_CTL_COMMANDS,
  ...DATA_CTL_COMMANDS
]
