/**
 * The schema registry of a node, as the rule engine creates it (rules/engine.ts): its table
 * is the cluster-wide `schemas` table (node.shared), its SQL functions are installed before
 * the engine compiles any rule, and the functions find it by the node's name.
 */
import type { StarlingNode } from '../../node/node.js'
import { attachRegistry, installSchemaFunctions } from './functions.js'
import { SchemaRegistry } from './registry.js'
import type { Schema } from './schema.js'
import type { ResourceLookup } from './third-party-codec.js'

/** The replicated table of the schemas (key: schema name). */
export const SCHEMAS_TABLE = 'schemas'

/** What the registry asks of the rule engine. */
export interface SchemaRegistryDeps {
  /** Ids of the rules whose SQL uses schema `name`. */
  usedBy: (name: string) => string[]
  resource: ResourceLookup
}

/** What the registry uses of its node: the `schemas` table, the logger, and the name its SQL functions find it by. */
export type SchemaRegistryComponents = Pick<StarlingNode, 'name' | 'logger' | 'shared'>

/** Creates a node's registry (stored schemas compiled) and installs `schema_encode`/`schema_decode`. */
export function createNodeSchemaRegistry (components: SchemaRegistryComponents, deps: SchemaRegistryDeps): SchemaRegistry {
  installSchemaFunctions()
  const registry = new SchemaRegistry({
    table: components.shared.table<Schema>(SCHEMAS_TABLE),
    logger: components.logger.child({ component: 'rules:schemas' }),
    usedBy: deps.usedBy,
    resource: deps.resource
  })
  attachRegistry(components.name, registry)
  return registry
}
