/**
 * `/api/v3/schemas` (spec: Endpoints/the service): create, list, show, delete. Thin: the
 * checks and the work are in rules/schemas/schema-ops.ts and the registry beside it. Bad input: 107
 * missing field, 108 wrong type or value not allowed (a malformed name), 102 (HTTP 400) a
 * duplicate name, a schema that does not compile, a 3rd-party service that cannot be
 * reached, a schema a rule uses; 102 with HTTP 404 an unknown name (docs/schema-registry.md).
 */
import { defineRoutes, type JsonSchema, type RouteDef } from '../route-table.js'
import { createSchema, deleteSchema, listSchemas, showSchema, type SchemaInput } from '../../rules/schemas/schema-ops.js'

const CREATE_BODY: JsonSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'unique; first character [A-Za-z_], the others [A-Za-z0-9_]' },
    parser_type: { type: 'string', description: 'avro, protobuf or 3rd-party' },
    schema: { type: ['string', 'null'], description: 'avro: the schema JSON; protobuf: the .proto text; 3rd-party: optional, kept as given' },
    parser_addr: {
      type: ['object', 'null'],
      description: '3rd-party: one of url (HTTP), server (<ip>:<port>, TCP), resource_id',
      properties: { url: { type: 'string' }, server: { type: 'string' }, resource_id: { type: 'string' } }
    },
    parser_opts: {
      type: ['object', 'null'],
      description: '3rd-party: 3rd_party_opts (required), connect_timeout and parse_timeout (seconds)',
      properties: { '3rd_party_opts': { type: 'string' }, connect_timeout: { type: 'integer' }, parse_timeout: { type: 'integer' } }
    },
    description: { type: ['string', 'null'], description: 'default ""' }
  },
  required: ['name', 'parser_type']
}

/** The schema endpoints. */
export const SCHEMA_ROUTES: RouteDef[] = defineRoutes([
  {
    name: 'create_schema',
    method: 'POST',
    path: '/schemas',
    descr: 'Create a schema (avro, protobuf or 3rd-party)',
    body: CREATE_BODY,
    handler: async (req) => {
      const { name, parser_type, schema, parser_addr, parser_opts, description } = req.body as SchemaInput
      return { data: await createSchema(req.rules, { name, parser_type, schema, parser_addr, parser_opts, description }) }
    }
  },
  {
    name: 'list_schemas',
    method: 'GET',
    path: '/schemas',
    descr: 'List all schemas',
    handler: (req) => ({ data: listSchemas(req.rules) })
  },
  {
    name: 'show_schema',
    method: 'GET',
    path: '/schemas/:name',
    descr: 'Show a schema',
    handler: (req) => ({ data: showSchema(req.rules, req.params.name) })
  },
  {
    name: 'delete_schema',
    method: 'DELETE',
    path: '/schemas/:name',
    descr: 'Delete a schema no rule uses',
    handler: async (req) => { await deleteSchema(req.rules, req.params.name); return undefined }
  }
])
