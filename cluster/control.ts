/**
 * The node-side handlers of the `cluster` commands (join, leave, force-leave, status) on
 * the node's control socket, served while the cluster part runs. A failure answers the
 * error's message with its spec code (107 for a missing argument).
 */
import { ControlError, type ControlServer } from '../node/control/index.js'
import { toApiError } from '../node/errors.js'
import type { Cluster, MemberInfo } from './cluster.js'

const COMMANDS = ['cluster join', 'cluster leave', 'cluster force-leave', 'cluster status']

/** Registers the `cluster` commands of `cluster` on `control`; returns the function that removes them. */
export function registerClusterControl (control: ControlServer, cluster: Pick<Cluster, 'join' | 'leave' | 'forceLeave' | 'status'>): () => void {
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
  return () => { for (const command of COMMANDS) control.unregister(command) }
}
