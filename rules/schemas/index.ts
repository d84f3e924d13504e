/**
 * The schema registry (docs/schema-registry.md): avro, protobuf and 3rd-party schemas kept
 * in the cluster-wide `schemas` table, `schema_encode`/`schema_decode` in rule SQL, the
 * 3rd-party codec protocol and its reference server. Factories and types only.
 */
export { SchemaRegistry, type SchemaRegistryInit, type SchemaTable } from './registry.js'
export { createNodeSchemaRegistry, SCHEMAS_TABLE, type SchemaRegistryDeps, type SchemaRegistryComponents } from './service.js'
export type { SchemaOpsComponents, SchemaOperationsComponents } from './schema-ops.js'
export { installSchemaFunctions, attachRegistry } from './functions.js'
export { compileAvro } from './avro-codec.js'
export { compileProtobuf } from './protobuf-codec.js'
export { SchemaCompileError, type SchemaCodec } from './codec.js'
export { startCodecServer, referenceCodec, type CodecServer, type CodecServerInit, type CodecFunction } from './codec-server.js'
export { frame, FrameReader, type CodecRequest, type CodecResponse } from './codec-wire.js'
export { SCHEMA_CTL_COMMANDS } from './ctl.js'
export {
  checkSchemaInput, PARSER_TYPES, SCHEMA_NAME, DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_PARSE_TIMEOUT_S,
  type Schema, type SchemaInput, type ParserType, type ParserAddr, type ParserOpts
} from './schema.js'
