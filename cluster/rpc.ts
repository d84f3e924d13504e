/**
 * Node RPC over the mesh: request/response frames on the link to the named node. Carries
 * both the node operations of the API and CLI (node/rpc.ts `RemoteCaller`) and the
 * cluster's own calls (snapshots, takeover). A call to a node whose link is down, or that
 * does not answer within the timeout, fails with code 101 (badrpc).
 */
import { ApiError, BadRpcError, toApiError } from '../node/errors.js'
import type { Frame, Mesh } from './mesh.js'

/** A handler of cluster calls: `from` is the calling node. */
export type ClusterHandler = (args: any, from: string) => Promise<unknown> | unknown

interface Pending {
  resolve: (value: unknown) => void
  reject: (err: Error) => void
  timer: NodeJS.Timeout
  node: string
}

export class MeshRpc {
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private readonly handlers = new Map<string, ClusterHandler>()

  constructor (private readonly mesh: Mesh, private readonly timeoutMs: number) {
    mesh.on('frame', (from, frame) => {
      if (frame.k === 'q') void this.answer(from, frame)
      else if (frame.k === 'r') this.settle(from, frame)
    })
    mesh.on('down', (name) => {
      for (const [id, p] of this.pending) {
        if (p.node !== name) continue
        this.pending.delete(id)
        clearTimeout(p.timer)
        p.reject(new BadRpcError(`node ${name} went down during the call`))
      }
    })
  }

  /** Registers the handler of method `name`. */
  handle (name: string, handler: ClusterHandler): void {
    this.handlers.set(name, handler)
  }

  /** Calls `method` on `node`; rejects with the node's error, or 101 when it cannot answer. */
  async call (node: string, method: string, args: unknown, timeoutMs = this.timeoutMs, label = method): Promise<unknown> {
    const id = this.nextId++
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new BadRpcError(`node ${node} did not answer ${label} within ${timeoutMs} ms`))
      }, timeoutMs)
      this.pending.set(id, { resolve, reject, timer, node })
      if (!this.mesh.send(node, { k: 'q', id, m: method, a: args })) {
        this.pending.delete(id)
        clearTimeout(timer)
        reject(new BadRpcError(`node ${node} is not connected`))
      }
    })
  }

  private async answer (from: string, frame: Frame): Promise<void> {
    const handler = this.handlers.get(frame.m as string)
    try {
      if (handler === undefined) throw new BadRpcError(`node ${this.mesh.name} has no cluster method ${String(frame.m)}`)
      const value = await handler(frame.a, from)
      this.mesh.send(from, { k: 'r', id: frame.id, ok: true, v: value === undefined ? null : value })
    } catch (err) {
      const e = toApiError(err)
      this.mesh.send(from, { k: 'r', id: frame.id, ok: false, e: { code: e.code, message: e.message, status: e.status } })
    }
  }

  /**
   * An answer settles a call only when it comes from the node the call went to: ids are
   * this node's counter, so any linked peer could otherwise answer another node's call (a
   * routes or data snapshot, a session takeover) with what it liked (found by
   * bench/fuzz/cluster-door.ts's `r` frames).
   */
  private settle (from: string, frame: Frame): void {
    const p = this.pending.get(frame.id as number)
    if (p === undefined || p.node !== from) return
    this.pending.delete(frame.id as number)
    clearTimeout(p.timer)
    if (frame.ok === true) p.resolve(frame.v)
    else {
      const e = frame.e as { code: number, message: string, status: number }
      // relays the remote node's answer: its code and status come over the wire
      p.reject(new ApiError(e.code, e.message, e.status))
    }
  }

  /** Rejects every call in flight (the node stops). */
  close (): void {
    for (const p of this.pending.values()) {
      clearTimeout(p.timer)
      p.reject(new BadRpcError('the cluster is stopping'))
    }
    this.pending.clear()
  }
}
