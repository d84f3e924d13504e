/**
 * The banned list for the API (spec: Banned entry, Endpoints/Banned list): node operations
 * `banned.list`, `banned.add` and `banned.delete` over the node's banned service, and the
 * service functions the `/api/v3/banned/` handlers call.
 *
 * The banned list is cluster-wide data (a replicated store table, docs/banned.md), so the
 * API reads and changes it through the node that got the request; the cluster replicates
 * the change. Entries and their rules are the banned service's (node/banned/).
 */
import type { StarlingNode } from '../node.js'
import type { BannedEntry, BannedInput } from '../banned/index.js'

/** What the service functions use of the node: its RPC and its name (they run `banned.*` on this node). */
export type BannedComponents = Pick<StarlingNode, 'rpc' | 'name'>

/** `GET /banned/`: the live entries, ordered by `as`, then `who`. */
export async function listBanned (node: BannedComponents): Promise<BannedEntry[]> {
  return await node.rpc.call<BannedEntry[]>(node.name, 'banned.list')
}

/** `POST /banned/`: adds (or replaces) an entry; 107/108 for bad input, nothing stored. */
export async function addBanned (node: BannedComponents, input: BannedInput): Promise<BannedEntry> {
  return await node.rpc.call<BannedEntry>(node.name, 'banned.add', input)
}

/** `DELETE /banned/:who?as=`: 107 without `as`, 108 for a wrong one, HTTP 404 (code 102) when there is no such entry. */
export async function deleteBanned (node: BannedComponents, who: string, as: unknown): Promise<void> {
  await node.rpc.call(node.name, 'banned.delete', { who, as })
}

/** Registers the banned-list operations on `node.rpc`. */
export function registerBannedOperations (node: StarlingNode): void {
  node.rpc.register('banned.list', () => node.services.banned.list())
  node.rpc.register('banned.add', async (input: BannedInput) => await node.services.banned.add(input))
  // an unknown entry is BannedEntryNotFoundError: 404 with code 102 (node/errors.ts)
  node.rpc.register('banned.delete', async (args: { who: string, as: unknown }) => { await node.services.banned.delete(args.who, args.as as string) })
}
