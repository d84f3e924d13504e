/**
 * The rule SQL functions of the registry (spec: Rule SQL functions, codec group; EMQ X 4's
 * forms): `schema_decode(SchemaId, Data[, MessageType])` and
 * `schema_encode(SchemaId, Map[, MessageType])`. They replace the placeholders of
 * rules/funcs/index.ts through `registerFunction`.
 *
 * The function table is one per process while each node has its own registry (tests run
 * several nodes in one process), so the functions are contextual: they read the event's
 * `node` column and call that node's registry. {@link installSchemaFunctions} must run
 * before any rule compiles, because a compiled rule keeps the function it resolved; the
 * SQL loader (rules/sql-loader.ts) calls it when it loads the compiler, before any rule compiles.
 */
import { registerFunction, FunctionUnavailableError, type RuleFunction } from '../funcs/index.js'
import type { SchemaRegistry } from './registry.js'
import { attachedRegistry } from './node-registries.js'
export { attachRegistry } from './node-registries.js'

let installed = false

/** The registry for an event's columns: its node's, or the only one when there is one (node-registries.ts). */
function registryFor (fn: string, cols: unknown): SchemaRegistry {
  const node = (cols as { node?: unknown } | undefined)?.node
  const registry = attachedRegistry(node)
  if (registry === undefined) throw new FunctionUnavailableError(fn, `the schema registry of node ${String(node)}`)
  return registry
}

/** `schema_decode`: the arguments, then the event's columns (contextual). */
const schemaDecode: RuleFunction = {
  name: 'schema_decode',
  minArgs: 2,
  maxArgs: 3,
  contextual: true,
  fn: (...args) => {
    const cols = args[args.length - 1]
    return registryFor('schema_decode', cols).decode(args[0], args[1], args.length === 4 ? args[2] : undefined)
  }
}

/** `schema_encode`: as {@link schemaDecode}; the result is always a Buffer. */
const schemaEncode: RuleFunction = {
  name: 'schema_encode',
  minArgs: 2,
  maxArgs: 3,
  contextual: true,
  fn: (...args) => {
    const cols = args[args.length - 1]
    return registryFor('schema_encode', cols).encode(args[0], args[1], args.length === 4 ? args[2] : undefined)
  }
}

/** Registers the two functions in the SQL function table (once per process; later calls do nothing). */
export function installSchemaFunctions (): void {
  if (installed) return
  installed = true
  registerFunction(schemaDecode)
  registerFunction(schemaEncode)
}
