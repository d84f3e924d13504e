import type { CtlCommand } from './control/index.js'
import { CTL_COMMANDS } from './control/index.js'
import { ACL_CTL_COMMANDS } from './acl/index.js'
import { AUTH_CTL_COMMANDS } from './auth/index.js'
import { BANNED_CTL_COMMANDS } from './banned/index.js'
import { PLUGIN_CTL_COMMANDS } from './plugins/index.js'
import { TRACE_CTL_COMMANDS, LOG_CTL_COMMANDS } from './trace/index.js'
import { MGMT_CTL_COMMANDS } from './apps/ctl.js'
import { MONITORING_CTL_COMMANDS } from './ops/monitoring-ctl.js'
import { RULE_CTL_COMMANDS } from '../rules/ctl.js'
import { SCHEMA_CTL_COMMANDS } from '../rules/schemas/ctl.js'
import { CLUSTER_CTL_COMMANDS } from '../cluster/ctl.js'

/**
 * Every `starling-ctl` command, from every subsystem. Each subsystem defines its commands
 * beside its code; this is the one list the program is built from.
 */
export const ALL_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  ...CTL_COMMANDS,
  ...ACL_CTL_COMMANDS,
  ...PLUGIN_CTL_COMMANDS,
  ...AUTH_CTL_COMMANDS,
  ...BANNED_CTL_COMMANDS,
  ...TRACE_CTL_COMMANDS,
  ...LOG_CTL_COMMANDS,
  ...MGMT_CTL_COMMANDS,
  ...MONITORING_CTL_COMMANDS,
  ...RULE_CTL_COMMANDS,
  ...SCHEMA_CTL_COMMANDS,
  ...CLUSTER_CTL_COMMANDS
]
