/**
 * The schema registry's service layer (spec: Endpoints/the service, CLI), shared by the
 * `/api/v3/schemas` handlers and the `schemas list|show|create|delete` commands. Schemas
 * are cluster-wide data (the `schemas` shared table): one created on this node reaches the
 * others, which compile it too. The registry is the rule engine's (rules/engine.ts): these
 * functions are given the engine (its `schemas`), which the node's rules part (rules/part.ts)
 * creates and holds; {@link registerSchemaOperations} is called by that part.
 */
import { NotJsonError } from '../../node/errors.js'
import { maskUrl } from '../../node/config/index.js'
import type { RuleEngine } from '../engine.js'
import { checkJsonDepth } from '../../node/json-depth.js'
import type { Schema, SchemaInput } from './schema.js'
import type { ControlServer, ControlHandlers } from '../../node/control/index.js'

export type { Schema, SchemaInput }

/**
 * What the schema operations use: the rule engine's schema registry. The rule operations'
 * components (rules/rule-ops.ts) are these too, so the API and the CLI pass one object.
 */
export interface SchemaOpsComponents {
  readonly engine: Pick<RuleEngine, 'schemas'>
}

/** What {@link registerSchemaOperations} uses: the engine, and the control socket its commands join. */
export interface SchemaOperationsComponents extends SchemaOpsComponents {
  readonly control: Pick<ControlServer, 'register'>
}

/** `schema` as shown: a `parser_addr.url` with its credentials (`?token=`, `user:pass@`) masked. */
function schemaView (schema: Schema): Schema {
  const url = schema.parser_addr?.url
  return url === undefined ? schema : { ...schema, parser_addr: { ...schema.parser_addr, url: maskUrl(url) } }
}

/** `GET /schemas`, `schemas list`: every schema, by name. */
export function listSchemas ({ engine }: SchemaOpsComponents): Schema[] {
  return engine.schemas.list().map(schemaView)
}

/** `GET /schemas/:name`, `schemas show`: 404 (code 102) when unknown. */
export function showSchema ({ engine }: SchemaOpsComponents, name: string): Schema {
  return schemaView(engine.schemas.get(name))
}

/** `POST /schemas`, `schemas create`: checked, compiled (or its service reached) before it is stored. */
export async function createSchema ({ engine }: SchemaOpsComponents, input: SchemaInput): Promise<Schema> {
  return schemaView(await engine.schemas.create(input))
}

/** `DELETE /schemas/:name`, `schemas delete`: 404 when unknown, 102 while a rule uses it. */
export async function deleteSchema ({ engine }: SchemaOpsComponents, name: string): Promise<void> {
  await engine.schemas.delete(name)
}

/** Registers the `schemas ...` CLI handlers (the schema registry has no per-node RPC operation). */
export function registerSchemaOperations (components: SchemaOperationsComponents): void {
  for (const [name, handler] of Object.entries(schemaControlHandlers(components))) components.control.register(name, handler)
}

/** A JSON option of a command (109 when it is not JSON, JsonTooDeepError when it nests too deeply). */
function jsonArg (text: string | boolean | undefined, what: string): unknown {
  if (text === undefined || typeof text === 'boolean') return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new NotJsonError(`${what} is not JSON: ${(err as Error).message}`)
  }
  return checkJsonDepth(value, what)
}

const textArg = (value: string | boolean | undefined): string | undefined => typeof value === 'string' ? value : undefined

/** The node side of rules/schemas/ctl.ts, by command name. */
function schemaControlHandlers (ops: SchemaOpsComponents): ControlHandlers {
  return {
    'schemas list': () => listSchemas(ops),
    'schemas show': ({ args }) => showSchema(ops, args[0]),
    'schemas create': async ({ args, options }) => await createSchema(ops, {
      name: args[0],
      parser_type: args[1],
      schema: textArg(options.schema),
      parser_addr: jsonArg(options.parserAddr, '--parser-addr'),
      parser_opts: jsonArg(options.parserOpts, '--parser-opts'),
      description: textArg(options.descr)
    }),
    'schemas delete': async ({ args }) => { await deleteSchema(ops, args[0]); return 'ok' }
  }
}
