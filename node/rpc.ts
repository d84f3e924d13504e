import type { StarlingNode } from './node.js'
import { ApiError, CODES, toApiError } from './errors.js'

/**
 * A per-node operation: what one node answers about itself (its connections, its metrics ...)
 * or does to itself (kick a client, load a plugin). Arguments and results are plain JSON, so
 * the cluster can carry the call to another node unchanged.
 */
export type NodeOperation = (node: StarlingNode, args: any) => Promise<unknown> | unknown

/** How the cluster reaches another node (set by the cluster layer). */
export interface RemoteCaller {
  /** Names of the running nodes, this one included. */
  nodes: () => string[]
  /** Runs operation `name` on `node` and returns its JSON result; rejects with the node's error. */
  call: (node: string, name: string, args: unknown) => Promise<unknown>
}

/** One node's answer in a cluster-wide call. */
export type NodeResult<T> = { node: string, ok: true, result: T } | { node: string, ok: false, error: ApiError }

/**
 * The operations of this node, callable by node name. Every API handler and every CLI
 * command goes through here: on a single node a call runs locally; once the cluster sets
 * `remote`, a call for another node travels over the mesh, and `callAll` merges the answers
 * of every running node by node, without any handler changing.
 */
export class NodeRpc {
  private readonly operations = new Map<string, NodeOperation>()
  /** Set by the cluster layer; null on a single node. */
  remote: RemoteCaller | null = null

  constructor (readonly node: StarlingNode) {}

  /** Registers an operation under `name` (e.g. `connections.list`). */
  register (name: string, operation: NodeOperation): void {
    if (this.operations.has(name)) throw new Error(`node operation ${name} is registered twice`)
    this.operations.set(name, operation)
  }

  /** Runs a registered operation here (what a remote node asks this node to do). */
  async local (name: string, args: unknown): Promise<unknown> {
    const operation = this.operations.get(name)
    if (operation === undefined) throw new ApiError(CODES.UNKNOWN, `unknown node operation ${name}`, 500)
    return await operation(this.node, args)
  }

  /** The running nodes, this one first. */
  nodes (): string[] {
    if (this.remote === null) return [this.node.name]
    const others = this.remote.nodes().filter(n => n !== this.node.name)
    return [this.node.name, ...others]
  }

  /** Throws a clear error when `node` is not a running node of the cluster. */
  checkNode (node: string): void {
    const nodes = this.nodes()
    if (!nodes.includes(node)) throw new ApiError(CODES.UNKNOWN, `unknown node ${node}; running nodes: ${nodes.join(', ')}`, 404)
  }

  /** Runs operation `name` on `node`. */
  async call<T = unknown> (node: string, name: string, args: unknown = {}): Promise<T> {
    this.checkNode(node)
    if (node === this.node.name || this.remote === null) return await this.local(name, args) as T
    try {
      return await this.remote.call(node, name, args) as T
    } catch (err) {
      const e = toApiError(err)
      throw e.code === CODES.UNKNOWN && e.status === 500 ? new ApiError(CODES.BADRPC, `node ${node}: ${e.message}`) : e
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
   * Cluster-wide list: every node's items, each with its `node`, in node order. A node that
   * failed makes the whole list fail only when no node answered (its error is reported);
   * otherwise its items are missing and `failed` names it.
   */
  async mergeAll<T extends object> (name: string, args: unknown = {}): Promise<{ items: Array<T & { node: string }>, failed: Array<{ node: string, error: ApiError }> }> {
    const answers = await this.callAll<T[]>(name, args)
    const items: Array<T & { node: string }> = []
    const failed: Array<{ node: string, error: ApiError }> = []
    for (const answer of answers) {
      if (answer.ok) for (const item of answer.result) items.push({ ...item, node: answer.node })
      else failed.push({ node: answer.node, error: answer.error })
    }
    if (items.length === 0 && failed.length === answers.length && failed.length > 0) throw failed[0].error
    return { items, failed }
  }
}
