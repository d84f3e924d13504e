import { ApiError, BadRpcError, CODES, InternalError, NotFoundError, toApiError } from './errors.js'

/**
 * A per-node operation: what one node answers about itself (its connections, its metrics ...)
 * or does to itself (kick a client, load a plugin). Arguments and results are plain JSON, so
 * the cluster can carry the call to another node unchanged.
 */
export type NodeOperation = (args: any) => Promise<unknown> | unknown

/** How the cluster reaches another node (attached by the cluster part, see {@link NodeRpc.attachRemote}). */
export interface RemoteCaller {
  /** Names of the running nodes, this one included. */
  nodes: () => string[]
  /** Members of the cluster that are not running (`stopped` in `cluster status`). */
  stopped: () => string[]
  /** Runs operation `name` on `node` and returns its JSON result; rejects with the node's error. */
  call: (node: string, name: string, args: unknown) => Promise<unknown>
}

/** One node's answer in a cluster-wide call. */
export type NodeResult<T> = { node: string, ok: true, result: T } | { node: string, ok: false, error: ApiError }

/** One node's answer to a per-node read, in the cluster form. */
export interface PerNode<T> {
  node: string
  result: T
}

/**
 * A node whose part of a cluster-wide call failed: its error code (101, badrpc, when it did
 * not answer within the timeout or is unreachable) and message. The API reports these in
 * `meta.failed`, the CLI as one line per node.
 */
export interface FailedNode {
  node: string
  code: number
  message: string
}

/**
 * The result of a cluster-wide call: the items of the nodes that answered and the nodes
 * that failed. Invariant: a node is in one or the other, never both, and a failed node's
 * items are missing (the list is partial exactly when `failed` is not empty).
 */
export interface ClusterList<T> {
  items: T[]
  failed: FailedNode[]
}

/**
 * The operations of this node, callable by node name. Every API handler and every CLI
 * command goes through here: on a single node a call runs locally; once the cluster sets
 * `remote`, a call for another node travels over the mesh, and `callAll` merges the answers
 * of every running node by node, without any handler changing.
 */
export class NodeRpc {
  private readonly operations = new Map<string, NodeOperation>()
  /** The cluster's caller while the cluster part runs; null on a single node. */
  private remote: RemoteCaller | null = null

  /** @param name this node's name (`node.name`) */
  constructor (readonly name: string) {}

  /**
   * Lets calls for other nodes travel through `remote` (the cluster part, once its mesh
   * runs); the returned function detaches it again (calls are local-only after it).
   */
  attachRemote (remote: RemoteCaller): () => void {
    this.remote = remote
    return () => { if (this.remote === remote) this.remote = null }
  }

  /** Registers an operation under `name` (e.g. `connections.list`). */
  register (name: string, operation: NodeOperation): void {
    if (this.operations.has(name)) throw new Error(`node operation ${name} is registered twice`)
    this.operations.set(name, operation)
  }

  /**
   * Removes operation `name` (a plugin's operations when it unloads or detaches); false when
   * it was not registered.
   */
  unregister (name: string): boolean {
    return this.operations.delete(name)
  }

  /** Runs a registered operation here (what a remote node asks this node to do). */
  async local (name: string, args: unknown): Promise<unknown> {
    const operation = this.operations.get(name)
    if (operation === undefined) throw new InternalError(`unknown node operation ${name}`)
    return await operation(args)
  }

  /** The running nodes, this one first. */
  nodes (): string[] {
    if (this.remote === null) return [this.name]
    const others = this.remote.nodes().filter(n => n !== this.name)
    return [this.name, ...others]
  }

  /**
   * Throws a clear error when `node` is not a running node of the cluster: 101 (badrpc)
   * for a stopped member, HTTP 404 with code 102 for a name the cluster does not know.
   */
  checkNode (node: string): void {
    const nodes = this.nodes()
    if (nodes.includes(node)) return
    if (this.stoppedNodes().includes(node)) {
      throw new BadRpcError(`node ${node} is stopped (see cluster status); running nodes: ${nodes.join(', ')}`)
    }
    throw NotFoundError.withMessage(`unknown node ${node}; running nodes: ${nodes.join(', ')}`)
  }

  /** Runs operation `name` on `node`. */
  async call<T = unknown> (node: string, name: string, args: unknown = {}): Promise<T> {
    this.checkNode(node)
    if (node === this.name || this.remote === null) return await this.local(name, args) as T
    try {
      return await this.remote.call(node, name, args) as T
    } catch (err) {
      const e = toApiError(err)
      throw e.code === CODES.UNKNOWN && e.status === 500 ? new BadRpcError(`node ${node}: ${e.message}`) : e
    }
  }

  /** Runs operation `name` on every running node; each answer or error is kept by node. */
  async callAll<T = unknown> (name: string, args: unknown = {}): Promise<Array<NodeResult<T>>> {
    return await Promise.all(this.nodes().map(async (node): Promise<NodeResult<T>> => {
      try {
        return { node, ok: true, result: await this.call<T>(node, name, args) }
      } catch (err) {
        return { node, ok: false, error: toApiError(err) }
      }
    }))
  }

  /**
   * Runs operation `name` on every running node: the answers of the nodes that answered, in
   * node order, and the nodes that failed (or did not answer within the cluster's RPC
   * timeout: code 101). Throws the first error only when no node answered at all.
   */
  async gather<T = unknown> (name: string, args: unknown = {}): Promise<ClusterList<PerNode<T>>> {
    const answers = await this.callAll<T>(name, args)
    const items: Array<PerNode<T>> = []
    const failed: FailedNode[] = []
    for (const answer of answers) {
      if (answer.ok) items.push({ node: answer.node, result: answer.result })
      else failed.push(failedNode(answer.node, answer.error))
    }
    const first = answers.find(a => !a.ok)
    if (items.length === 0 && first !== undefined && !first.ok) throw first.error
    return { items, failed }
  }

  /**
   * Cluster-wide list: every answering node's items, each with its `node`, in node order,
   * and the nodes that failed (see {@link gather}).
   */
  async mergeAll<T extends object> (name: string, args: unknown = {}): Promise<ClusterList<T & { node: string }>> {
    const { items: answers, failed } = await this.gather<T[]>(name, args)
    const items: Array<T & { node: string }> = []
    for (const answer of answers) for (const item of answer.result) items.push({ ...item, node: answer.node })
    return { items, failed }
  }

  /**
   * Members of the cluster that are not running (`stopped` in `cluster status`), by name.
   * Empty on a single node, and before the cluster part has started.
   */
  stoppedNodes (): string[] {
    if (this.remote === null) return []
    const running = new Set(this.nodes())
    return this.remote.stopped().filter(name => !running.has(name))
  }
}

/** `failed` entry of a node whose part of a cluster-wide call failed with `error`. */
export function failedNode (node: string, error: ApiError): FailedNode {
  return { node, code: error.code, message: error.message }
}
