/**
 * Node addresses `name@host[:port]`: how `cluster join`, static seeds and the RPC bridge
 * name another node and reach its cluster port. Its own module so that the cluster and the
 * bridge transport both use it without importing each other.
 */
import { WrongTypeError } from '../node/errors.js'

/** The cluster port when a node address names none. */
export const DEFAULT_CLUSTER_PORT = 4370

/** Host and cluster port of `name@host[:port]`; throws a clear error on a bad form. */
export function parseNodeAddress (target: string): { name: string, host: string, port: number } {
  const match = /^([^@\s]+)@([^@\s:]+|\[[^\]]+\])(?::(\d+))?$/.exec(target)
  if (match === null) throw new WrongTypeError(`bad node name ${target}; expected <name>@<host> or <name>@<host>:<port>`)
  const port = match[3] === undefined ? DEFAULT_CLUSTER_PORT : Number(match[3])
  if (port < 1 || port > 65535) throw new WrongTypeError(`bad cluster port in ${target}`)
  return { name: `${match[1]}@${match[2]}`, host: match[2].replace(/^\[|\]$/g, ''), port }
}
