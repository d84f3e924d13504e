/**
 * Starts the node's cluster part (cluster/cluster.ts) and serves its control commands and
 * node operations: `cluster.status` answers which nodes run and which are stopped.
 */
import type { StarlingNode } from '../node/node.js'
import { ControlError } from '../node/control/index.js'
import { toApiError } from '../node/errors.js'
import { Cluster, type MemberInfo } from './cluster.js'

export { Cluster, parseNodeAddress, type MemberInfo } from './cluster.js'
export { CLUSTER_CTL_COMMANDS } from './ctl.js'

/** Starts the cluster part of `node`; resolves with it once its mesh listens. */
export async function startCluster (node: StarlingNode): Promise<Cluster> {
  const cluster = new Cluster(node)
  await cluster.start()
  const control = node.control
  const failing = async <T>(run: () => Promise<T> | T): Promise<T> => {
    try {
      return await run()
    } catch (err) {
      const e = toApiError(err)
      throw new ControlError(e.message, e.code)
    }
  }
  control.register('cluster join', async ({ args }) => await failing(async () => {
    if (args[0] === undefined) throw new ControlError('cluster join needs a node name, such as starling@10.0.0.2', 107)
    return await cluster.join(args[0])
  }))
  control.register('cluster leave', async () => await failing(async () => { await cluster.leave(); return cluster.status() }))
  control.register('cluster force-leave', async ({ args }) => await failing(async () => {
    if (args[0] === undefined) throw new ControlError('cluster force-leave needs a node name', 107)
    await cluster.forceLeave(args[0])
    return cluster.status()
  }))
  control.register('cluster status', (): MemberInfo[] => cluster.status())
  return cluster
}
