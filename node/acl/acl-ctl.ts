/**
 * `starling-ctl acl reload`: the command table entry and how its result prints (its own file,
 * as starling-ctl loads it without the ACL service). The node side is in acl-service.ts.
 */
import { defineCommand, type CtlCommand } from '../control/commands.js'

/** Result of the node's `acl reload` control command. */
export interface AclReloadResult {
  /** Number of rules now in force. */
  rules: number
}

/**
 * `acl reload`: EMQ X's `emqx_ctl acl reload` ("reload etc/acl.conf"). Prints `ok` and the
 * number of rules now in force; a bad file prints the file, line and problem and exits 1.
 */
export const aclReloadCommand = defineCommand<AclReloadResult>({
  words: ['acl', 'reload'],
  description: 'Reload the ACL file (acl_file) and empty every client\'s ACL cache',
  render (result) {
    return `ok\nrules: ${result.rules}\n`
  }
})

/** The `starling-ctl` commands of the ACL, for the command table. */
export const ACL_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [aclReloadCommand]
