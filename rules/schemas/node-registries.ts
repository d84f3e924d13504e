/**
 * Which schema registry the SQL functions `schema_encode`/`schema_decode` call for an event:
 * its node's (functions.ts). The function table is one per process while each node has its
 * own registry (tests run several nodes in one process), so a node's registry is attached
 * here by the node's name when the engine creates it. Kept apart from functions.ts, which
 * imports the SQL function table: a node attaches its registry at start, and the function
 * table loads only with the first rule (rules/sql-loader.ts).
 */
import type { SchemaRegistry } from './registry.js'

/** Registries by node name (weakly: a stopped node's registry can be collected). */
const registries = new Map<string, WeakRef<SchemaRegistry>>()

/** Makes `registry` the one the functions use for events of node `nodeName`. */
export function attachRegistry (nodeName: string, registry: SchemaRegistry): void {
  registries.set(nodeName, new WeakRef(registry))
}

/** The registry of node `node` (a string from the event's columns), or the only one when there is one. */
export function attachedRegistry (node: unknown): SchemaRegistry | undefined {
  const registry = typeof node === 'string' ? registries.get(node)?.deref() : undefined
  if (registry === undefined && registries.size === 1) return registries.values().next().value?.deref()
  return registry
}
