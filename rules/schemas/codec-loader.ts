/**
 * The avro and protobuf compilers (avro-codec.ts with avsc, protobuf-codec.ts with protobufjs),
 * loaded with the first schema of their type instead of with every node (issue 22, idle
 * memory: avsc and protobufjs are about 10 and 7.5 MB of memory, and most nodes have no
 * schema). The registry loads a type's compiler before it compiles a schema of that type:
 * at its creation for the stored schemas (`SchemaRegistry.open`), at a create, and at a change
 * made on another node.
 *
 * The loaded compilers are kept here once per process, as the module loader keeps the modules
 * themselves: code, not a node's state.
 */
import type { SchemaCodec } from './codec.js'

/** The parser types compiled here (a 3rd-party schema calls its service instead). */
export type CompiledParserType = 'avro' | 'protobuf'

/** Compiles schema text of one type; throws `SchemaCompileError` (codec.ts) for text that does not compile. */
export type SchemaCompiler = (text: string) => SchemaCodec

const compilers: Partial<Record<CompiledParserType, SchemaCompiler>> = {}

/** The compiler of `type`, imported on the first call. */
export async function loadCompiler (type: CompiledParserType): Promise<SchemaCompiler> {
  compilers[type] ??= type === 'avro'
    ? (await import('./avro-codec.js')).compileAvro
    : (await import('./protobuf-codec.js')).compileProtobuf
  return compilers[type]
}

/** The compiler of `type` once {@link loadCompiler} resolved for it; undefined before. */
export function loadedCompiler (type: CompiledParserType): SchemaCompiler | undefined {
  return compilers[type]
}

/** Whether a schema of `parserType` is compiled here (avro, protobuf) rather than by a service. */
export function isCompiledType (parserType: string): parserType is CompiledParserType {
  return parserType === 'avro' || parserType === 'protobuf'
}
