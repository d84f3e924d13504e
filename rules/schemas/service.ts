/**
 * The schema registry of a node, as the rule engine creates it (rules/engine.ts): its table
 * is the cluster-wide `schemas` table (node.shared), and the SQL functions find it by the
 * node's name. The functions themselves are installed with the SQL compiler, before any rule
 * compiles (rules/sql-loader.ts).
 */
import type { StarlingNode } from '../../node/node.js'
import { attachRegistry } from './node-registries.js'
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

/** Creates a node's registry, its stored schemas compiled (their compilers loaded first: codec-loader.ts). */
export async function createNodeSchemaRegistry (components: SchemaRegistryComponents, deps: SchemaRegistryDeps): Promise<SchemaRegistry> {
  const registry = await SchemaRegistry.open({
    table: components.shared.table<Schema>(SCHEMAS_TABLE),
    logger: components.logger.child({ component: 'rules:schemas' }),
    usedBy: deps.usedBy,
    resource: deps.resource
  })
  attachRegistry(components.name, registry)
  return registry
}
