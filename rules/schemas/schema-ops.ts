/**
 * The schema registry's service layer (spec: Endpoints/the service, CLI), shared by the
 * `/api/v3/schemas` handlers and the `schemas list|show|create|delete` commands. Schemas
 * are cluster-wide data (the `schemas` shared table): one created on this node reaches the
 * others, which compile it too. The registry is the rule engine's (rules/engine.ts).
 */
import type { StarlingNode } from '../../node/node.js'
import { ApiError, CODES } from '../../node/errors.js'
import { ruleEngineOf } from '../engine.js'
import type { Schema, SchemaInput } from './schema.js'
import type { ControlHandlers } from '../../node/control/index.js'

export type { Schema, SchemaInput }

/** `GET /schemas`, `schemas list`: every schema, by name. */
export function listSchemas (node: StarlingNode): Schema[] {
  return ruleEngineOf(node).schemas.list()
}

/** `GET /schemas/:name`, `schemas show`: 404 (code 102) when unknown. */
export function showSchema (node: StarlingNode, name: string): Schema {
  return ruleEngineOf(node).schemas.get(name)
}

/** `POST /schemas`, `schemas create`: checked, compiled (or its service reached) before it is stored. */
export async function createSchema (node: StarlingNode, input: SchemaInput): Promise<Schema> {
  return await ruleEngineOf(node).schemas.create(input)
}

/** `DELETE /schemas/:name`, `schemas delete`: 404 when unknown, 102 while a rule uses it. */
export async function deleteSchema (node: StarlingNode, name: string): Promise<void> {
  await ruleEngineOf(node).schemas.delete(name)
}

/** Registers the `schemas ...` CLI handlers. */
export function registerSchemaOperations (node: StarlingNode): void {
  for (const [name, handler] of Object.entries(schemaControlHandlers(node))) node.control.register(name, handler)
}

/** A JSON option of a command (109 when it is not JSON). */
function jsonArg (text: string | boolean | undefined, what: string): unknown {
  if (text === undefined || typeof text === 'boolean') return undefined
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new ApiError(CODES.NOT_JSON, `${what} is not JSON: ${(err as Error).message}`)
  }
}

const textArg = (value: string | boolean | undefined): string | undefined => typeof value === 'string' ? value : undefined

/** The node side of rules/schemas/ctl.ts, by command name. */
function schemaControlHandlers (node: StarlingNode): ControlHandlers {
  return {
    'schemas list': () => listSchemas(node),
    'schemas show': ({ args }) => showSchema(node, args[0]),
    'schemas create': async ({ args, options }) => await createSchema(node, {
      name: args[0],
      parser_type: args[1],
      schema: textArg(options.schema),
      parser_addr: jsonArg(options.parserAddr, '--parser-addr'),
      parser_opts: jsonArg(options.parserOpts, '--parser-opts'),
      description: textArg(options.descr)
    }),
    'schemas delete': async ({ args }) => { await deleteSchema(node, args[0]); return 'ok' }
  }
}
