/**
 * `starling-ctl cluster join|leave|force-leave|status` (spec: CLI table), printed as EMQ X
 * 4's `emqx_ctl cluster` printed them. The node side is in cluster/index.ts.
 */
import { defineCommand, type CtlCommand } from '../node/control/commands.js'
import type { MemberInfo } from './cluster.js'

/** `Cluster status: #{running_nodes => [...], stopped_nodes => [...]}` plus one line per node. */
export function formatStatus (members: MemberInfo[]): string {
  const running = members.filter(m => m.status === 'running').map(m => `'${m.name}'`)
  const stopped = members.filter(m => m.status === 'stopped').map(m => `'${m.name}'`)
  const stoppedPart = stopped.length > 0 ? `,\n                 stopped_nodes => [${stopped.join(',')}]` : ''
  return `Cluster status: #{running_nodes => [${running.join(',')}]${stoppedPart}}\n`
}

const NODE = { name: 'Node', description: 'a node name, <name>@<host> or <name>@<host>:<cluster port>' }

/** The cluster commands, for `ALL_CTL_COMMANDS`. */
export const CLUSTER_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  defineCommand<MemberInfo[]>({
    words: ['cluster', 'join'],
    description: 'Join the cluster of another node (its cluster port defaults to 4370)',
    args: [NODE],
    timeoutMs: 15000,
    render: (members) => `Join the cluster successfully.\n${formatStatus(members)}`
  }),
  defineCommand<MemberInfo[]>({
    words: ['cluster', 'leave'],
    description: 'Leave the cluster',
    render: () => 'Leave the cluster successfully.\n'
  }),
  defineCommand<MemberInfo[]>({
    words: ['cluster', 'force-leave'],
    description: 'Remove a node from the cluster',
    args: [{ name: 'Node', description: 'the node name, <name>@<host>' }],
    render: (members) => `Remove the node from cluster successfully.\n${formatStatus(members)}`
  }),
  defineCommand<MemberInfo[]>({
    words: ['cluster', 'status'],
    description: 'Show the running and stopped nodes of the cluster',
    render: formatStatus
  })
]
