/**
 * Cluster-wide data over the mesh (node/store/shared.ts holds the data and decides who
 * wins): every local write goes to each peer as a `data` frame; a link coming up and any
 * heartbeat whose digest of a table differs from ours make this node pull that table's
 * snapshot from the peer and merge it (the peer does the same the other way), so a change
 * missed while a link was down is repaired. Merging is idempotent: applying a snapshot
 * twice, or a change after a newer one, changes nothing.
 */
import type { NodeComponents } from '../node/node.js'

/** What the data sync uses of the node: the replicated tables. */
export type DataSyncComponents = Pick<NodeComponents, 'shared'>
import type { Logger } from '../node/logger.js'
import type { SharedChange } from '../node/store/shared.js'
import type { Mesh } from './mesh.js'
import type { MeshRpc } from './rpc.js'

/** How long after a pull of a table from a node another pull of it may start. */
const PULL_INTERVAL_MS = 1000

export class DataSync {
  private unsubscribe: (() => void) | null = null
  private readonly pulling = new Map<string, number>()

  constructor (private readonly node: DataSyncComponents, private readonly mesh: Mesh, private readonly rpc: MeshRpc, private readonly log: Logger) {}

  start (): void {
    this.unsubscribe = this.node.shared.onLocalChange((change) => { this.mesh.broadcast({ k: 'data', c: change }) })
    this.mesh.on('frame', (_from, frame) => {
      if (frame.k === 'data') void this.apply(frame.c as SharedChange)
    })
    this.rpc.handle('data.snapshot', (args: { table: string }) => this.node.shared.snapshot(String(args.table)))
    this.rpc.handle('data.digests', () => this.digests())
  }

  stop (): void {
    this.unsubscribe?.()
  }

  /** Digest of each replicated table. */
  digests (): Record<string, string> {
    const digests: Record<string, string> = {}
    for (const table of this.node.shared.tableNames()) digests[table] = this.node.shared.digest(table)
    return digests
  }

  /** A new link: compare every table with the peer's. */
  peerUp (name: string): void {
    this.rpc.call(name, 'data.digests', {}).then((digests) => {
      this.compare(name, digests as Record<string, string>)
    }, (err: Error) => { this.log.debug({ peer: name, err: err.message }, 'cannot get data digests') })
  }

  /** Pulls each table whose digest on `name` differs from ours. */
  compare (name: string, theirs: Record<string, string>): void {
    for (const [table, digest] of Object.entries(theirs ?? {})) {
      try {
        if (this.node.shared.digest(table) === digest) continue
      } catch (err: any) {
        this.log.debug({ peer: name, table, err: err.message }, 'cannot compare a table')
        continue
      }
      void this.pull(name, table)
    }
  }

  /** Fetches `table` from `name` and merges it. */
  async pull (name: string, table: string): Promise<number> {
    const key = `${name}/${table}`
    const last = this.pulling.get(key) ?? 0
    if (Date.now() - last < PULL_INTERVAL_MS) return 0
    this.pulling.set(key, Date.now())
    let applied = 0
    try {
      const changes = await this.rpc.call(name, 'data.snapshot', { table }) as SharedChange[]
      for (const change of changes) if (await this.apply(change)) applied++
      if (applied > 0) this.log.info({ peer: name, table, applied }, 'cluster data repaired from peer')
    } catch (err: any) {
      this.log.debug({ peer: name, table, err: err.message }, 'cannot pull table')
    }
    return applied
  }

  private async apply (change: SharedChange): Promise<boolean> {
    try {
      return await this.node.shared.apply(change)
    } catch (err) {
      this.log.warn({ err, table: change?.table, key: change?.key }, 'cannot apply a cluster data change')
      return false
    }
  }
}
