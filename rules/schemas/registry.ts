/**
 * The schema registry of one node (spec: Resources/Schema, Endpoints/the service): the
 * schemas kept in the cluster-wide table `schemas`, each compiled into a {@link SchemaCodec}
 * held in memory, and the encode/decode calls the rule SQL functions make (functions.ts).
 *
 * - create: the fields are checked (schema.ts), the name must be new, avro and protobuf
 *   text must compile, a 3rd-party service must accept a connection; only then is the
 *   schema stored. Any failure leaves nothing stored.
 * - delete: refused while a rule's SQL calls `schema_encode`/`schema_decode` with the name.
 * - a change made on another node (the table's remote changes) compiles or drops the
 *   schema here too; a stored schema that no longer compiles stays stored, is logged, and
 *   fails every call until it is deleted and created again.
 *
 * Invariants: writes run one at a time; the in-memory map changes only after the table has
 * committed, so a failed write leaves both as they were. A schema is compiled only once its
 * type's compiler is loaded (codec-loader.ts: avsc and protobufjs load with the first schema
 * of their type); a stored or remote schema whose compiler is not loaded yet is compiled in
 * the write queue once it is, from what the table holds then.
 */
import type { Logger } from '../../node/logger.js'
import { RefusedError, notFound } from '../../node/errors.js'
import type { StoreTable } from '../../node/store/index.js'
import { ConversionError, DeferredResult, describe } from '../funcs/errors.js'
import { SerialQueue } from '../serial-queue.js'
import { SchemaCompileError, type SchemaCodec } from './codec.js'
import { isCompiledType, loadCompiler, loadedCompiler } from './codec-loader.js'
import { checkSchemaInput, type Schema, type SchemaInput } from './schema.js'
import { CodecExchange } from './codec-exchange.js'
import { ThirdPartyCodec, describeTarget, probeService, targetOf, timeoutsOf, type ResourceLookup } from './third-party-codec.js'

/** The table the schemas live in: a store table whose changes may also come from other nodes. */
export interface SchemaTable extends StoreTable<Schema> {
  /** Calls `listener` after another node's change was applied (value undefined: deleted). */
  onRemoteChange: (listener: (key: string, value: Schema | undefined) => void) => () => void
}

/** A schema table in memory, for registries outside a node (benches, unit tests): nothing replicates. */
export function memorySchemaTable (): SchemaTable {
  const data = new Map<string, Schema>()
  return {
    get: (k) => data.get(k),
    has: (k) => data.has(k),
    entries: () => [...data.entries()],
    count: () => data.size,
    put: async (k, v) => { data.set(k, v) },
    del: async (k) => { data.delete(k) },
    clear: async () => { data.clear() },
    onRemoteChange: () => () => {}
  }
}

/** What the registry needs. */
export interface SchemaRegistryInit {
  table: SchemaTable
  logger: Logger
  /** The ids of the rules whose SQL uses schema `name` (deleting it is refused while there are some). */
  usedBy: (name: string) => string[]
  /** The rule engine's resources (`parser_addr.resource_id`). */
  resource: ResourceLookup
}

interface Entry {
  schema: Schema
  /** null when the stored schema does not compile (`error` says why). */
  codec: SchemaCodec | null
  error: string | null
}

/** The schemas of one node and their compiled codecs. */
export class SchemaRegistry {
  private readonly entries = new Map<string, Entry>()
  private readonly queue = new SerialQueue()
  /** The worker thread of the 3rd-party calls, started on the first one. */
  private readonly exchange = new CodecExchange()
  private readonly offRemote: () => void

  /**
   * A registry of the schemas in `init.table`. Those whose compiler is loaded are compiled
   * here; the others once it is (in the write queue): {@link SchemaRegistry.open} loads them
   * all first, so that every stored schema is compiled when it resolves.
   */
  constructor (private readonly init: SchemaRegistryInit) {
    for (const [name, schema] of init.table.entries()) this.follow(name, schema, 'stored')
    this.offRemote = init.table.onRemoteChange((name, schema) => {
      if (schema === undefined) this.entries.delete(name)
      else this.follow(name, schema, 'from another node')
    })
  }

  /** A registry whose stored schemas are all compiled: the compilers of their types are loaded first. */
  static async open (init: SchemaRegistryInit): Promise<SchemaRegistry> {
    const types = new Set([...init.table.entries()].map(([, schema]) => schema?.parser_type))
    for (const type of types) if (typeof type === 'string' && isCompiledType(type)) await loadCompiler(type)
    return new SchemaRegistry(init)
  }

  /** Every schema, in name order. */
  list (): Schema[] {
    return [...this.entries.values()].map(e => e.schema).sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
  }

  /** The schema `name`, or undefined. */
  find (name: string): Schema | undefined {
    return this.entries.get(name)?.schema
  }

  /** The schema `name`; throws a not-found (404, code 102) as for unknown rules. */
  get (name: string): Schema {
    const entry = this.entries.get(name)
    if (entry === undefined) throw notFound(`schema ${name}`)
    return entry.schema
  }

  /** Checks, compiles (or connects to the service) and stores a new schema. */
  async create (input: SchemaInput): Promise<Schema> {
    return await this.queue.run(async () => {
      const schema = checkSchemaInput(input)
      if (this.entries.has(schema.name) || this.init.table.has(schema.name)) {
        throw new RefusedError(`schema ${schema.name} already exists; delete it first or choose another name`)
      }
      if (isCompiledType(schema.parser_type)) await loadCompiler(schema.parser_type)
      let codec: SchemaCodec
      try {
        codec = this.compile(schema)
      } catch (err) {
        if (err instanceof SchemaCompileError) throw new RefusedError(err.message)
        throw err
      }
      if (schema.parser_type === '3rd-party') await this.probe(schema)
      await this.init.table.put(schema.name, schema)
      this.entries.set(schema.name, { schema, codec, error: null })
      return schema
    })
  }

  /**
   * Checks and compiles a schema of a data import without storing it (a 3rd-party service is
   * not reached: it may not be reachable from here yet). Throws as `create` does, but takes an
   * existing name: {@link putImported} replaces that schema.
   */
  async checkImported (input: SchemaInput): Promise<{ schema: Schema, codec: SchemaCodec }> {
    const schema = checkSchemaInput(input)
    if (isCompiledType(schema.parser_type)) await loadCompiler(schema.parser_type)
    try {
      return { schema, codec: this.compile(schema) }
    } catch (err) {
      if (err instanceof SchemaCompileError) throw new RefusedError(err.message)
      throw err
    }
  }

  /** Stores a schema {@link checkImported} made, replacing one of that name. */
  async putImported (checked: { schema: Schema, codec: SchemaCodec }): Promise<void> {
    await this.queue.run(async () => {
      await this.init.table.put(checked.schema.name, checked.schema)
      this.entries.set(checked.schema.name, { schema: checked.schema, codec: checked.codec, error: null })
    })
  }

  /** Deletes schema `name`: 404 when unknown, refused (102) while a rule uses it. */
  async delete (name: string): Promise<void> {
    await this.queue.run(async () => {
      this.get(name)
      const rules = this.init.usedBy(name)
      if (rules.length > 0) {
        throw new RefusedError(`schema ${name} is used by rule ${rules.join(', ')}; delete those rules (or change their SQL) first`)
      }
      await this.init.table.del(name)
      this.entries.delete(name)
    })
  }

  /**
   * `schema_decode(name, data[, messageType])`: the decoded value. Throws a
   * {@link ConversionError} (the rule does not match and counts as failed) for an unknown
   * schema, data that is not binary, or data the schema cannot decode.
   */
  decode (name: unknown, data: unknown, messageType?: unknown): unknown {
    const codec = this.codecFor('schema_decode', name, messageType)
    let bytes: Buffer
    if (Buffer.isBuffer(data)) bytes = data
    else if (typeof data === 'string') bytes = Buffer.from(data, 'utf8')
    else throw failure('schema_decode', 'function_clause', `expected binary data, got ${describe(data)}`)
    // bad data can come with every message: the codecs' own errors are made without stacks
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    try {
      return codec.decode(bytes, messageType as string | undefined)
    } catch (err) {
      if (err instanceof DeferredResult) throw err
      throw failure('schema_decode', 'decode_failed', `schema ${String(name)} cannot decode ${describe(data)}: ${(err as Error).message}`)
    } finally {
      Error.stackTraceLimit = limit
    }
  }

  /** `schema_encode(name, value[, messageType])`: the encoded bytes (always a Buffer). Throws as {@link decode}. */
  encode (name: unknown, value: unknown, messageType?: unknown): Buffer {
    const codec = this.codecFor('schema_encode', name, messageType)
    try {
      return codec.encode(value, messageType as string | undefined)
    } catch (err) {
      if (err instanceof DeferredResult) throw err
      throw failure('schema_encode', 'encode_failed', `schema ${String(name)} cannot encode ${describe(value)}: ${(err as Error).message}`)
    }
  }

  /** Stops the 3rd-party worker thread (a later call starts it again). */
  release (): void {
    this.exchange.close()
  }

  /** {@link release}, and stops following other nodes' changes. */
  close (): void {
    this.offRemote()
    this.release()
  }

  private codecFor (fn: string, name: unknown, messageType: unknown): SchemaCodec {
    if (typeof name !== 'string') throw failure(fn, 'function_clause', `the schema id must be a string, got ${describe(name)}`)
    if (messageType !== undefined && typeof messageType !== 'string') {
      throw failure(fn, 'function_clause', `the message type must be a string, got ${describe(messageType)}`)
    }
    const entry = this.entries.get(name)
    if (entry === undefined) throw failure(fn, 'schema_not_found', `no schema named ${name}`)
    if (entry.codec === null) throw failure(fn, 'schema_invalid', `schema ${name} does not compile: ${entry.error ?? ''}`)
    return entry.codec
  }

  /** Compiles `schema`; its type's compiler is loaded (see the invariants). */
  private compile (schema: Schema): SchemaCodec {
    if (!isCompiledType(schema.parser_type)) return new ThirdPartyCodec(schema, this.exchange, this.init.resource)
    const compile = loadedCompiler(schema.parser_type)
    if (compile === undefined) throw new Error(`the ${schema.parser_type} compiler is not loaded yet`)
    return compile(schema.schema)
  }

  /**
   * Compiles a schema read from the table now when its compiler is loaded; otherwise loads
   * the compiler in the write queue and then compiles what the table holds under `name` (a
   * later change or delete may have come meanwhile).
   */
  private follow (name: string, schema: Schema, from: string): void {
    const type = schema?.parser_type
    if (typeof type !== 'string' || !isCompiledType(type) || loadedCompiler(type) !== undefined) {
      this.load(name, schema, from)
      return
    }
    this.queue.run(async () => {
      await loadCompiler(type)
      const current = this.init.table.get(name)
      if (current === undefined) this.entries.delete(name)
      else this.follow(name, current, from)
    }).catch((err) => this.init.logger.error({ schema: name, err }, `could not load the ${type} compiler for a schema ${from}`))
  }

  /** Compiles a schema read from the table; keeps it (uncompiled) when that fails. */
  private load (name: string, schema: Schema, from: string): void {
    try {
      this.entries.set(name, { schema, codec: this.compile(schema), error: null })
    } catch (err) {
      const error = (err as Error).message
      this.entries.set(name, { schema, codec: null, error })
      this.init.logger.error({ schema: name, err: error }, `a schema ${from} does not compile; it stays stored but every call with it fails`)
    }
  }

  /** Spec Errors 4: refuses a 3rd-party schema whose service cannot be connected to. */
  private async probe (schema: Schema): Promise<void> {
    let target
    try {
      target = targetOf(schema.parser_addr ?? {}, this.init.resource)
    } catch (err) {
      throw new RefusedError((err as Error).message)
    }
    const { connectMs } = timeoutsOf(schema.parser_opts)
    try {
      await probeService(target, connectMs)
    } catch (err) {
      throw new RefusedError(`cannot connect to the 3rd-party codec service at ${describeTarget(target)}: ${(err as Error).message}; start the service or correct parser_addr`)
    }
  }
}

/** A function failure, without a stack trace (see {@link SchemaRegistry.decode}). */
function failure (fn: string, reason: string, detail: string): ConversionError {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return new ConversionError(fn, reason, detail)
  } finally {
    Error.stackTraceLimit = limit
  }
}
