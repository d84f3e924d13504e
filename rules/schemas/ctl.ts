/**
 * `starling-ctl schemas list | show | create | delete` (the registry's CLI; EMQ X 4 had
 * none, so the shape follows the `rules` and `resources` commands). A schema prints as
 * `schema(name='...', parser_type='...', parser_addr=..., parser_opts=..., description='...')`;
 * `show` adds the schema text below it. The node side is rules/schemas/schema-ops.ts; `--json`
 * prints the API's objects.
 */
import { defineCommand, type CtlCommand } from '../../node/control/commands.js'
import type { Schema } from './schema.js'

const q = (text: unknown): string => `'${String(text ?? '').replace(/\r?\n/g, ' ')}'`
const json = (value: unknown): string => JSON.stringify(value ?? null)

/** One schema line. */
export function formatSchema (s: Schema): string {
  return `schema(name=${q(s.name)}, parser_type=${q(s.parser_type)}, parser_addr=${json(s.parser_addr)}, ` +
    `parser_opts=${json(s.parser_opts)}, description=${q(s.description)})\n`
}

/** The schema line, then its text (when it has one) as written. */
export function formatSchemaWithText (s: Schema): string {
  return formatSchema(s) + (s.schema === '' ? '' : s.schema.replace(/\n?$/, '\n'))
}

const NAME = { name: 'Name', description: 'the schema name, e.g. sensor' }

/** The schema registry commands, for `ALL_CTL_COMMANDS`. */
export const SCHEMA_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  defineCommand<Schema[]>({
    words: ['schemas', 'list'],
    description: 'List all schemas',
    render: (schemas) => schemas.map(formatSchema).join('')
  }),
  defineCommand<Schema>({
    words: ['schemas', 'show'],
    description: 'Show a schema with its text',
    args: [NAME],
    render: formatSchemaWithText
  }),
  defineCommand<Schema>({
    words: ['schemas', 'create'],
    description: 'Create a schema: avro or protobuf with --schema, 3rd-party with --parser-addr and --parser-opts',
    args: [NAME, { name: 'ParserType', description: 'avro, protobuf or 3rd-party' }],
    options: [
      { flags: '-s, --schema <text>', description: 'the schema text (avro JSON or .proto), e.g. "$(cat sensor.avsc)"' },
      { flags: '-a, --parser-addr <json>', description: '3rd-party: {"url":"http://host/path"}, {"server":"ip:port"} or {"resource_id":"..."}' },
      { flags: '-o, --parser-opts <json>', description: '3rd-party: {"3rd_party_opts":"...","connect_timeout":3,"parse_timeout":5}' },
      { flags: '-d, --descr <descr>', description: 'description' }
    ],
    render: (s) => `Schema ${s.name} created\n`
  }),
  defineCommand<string>({
    words: ['schemas', 'delete'],
    description: 'Delete a schema no rule uses',
    args: [NAME],
    render: () => 'ok\n'
  })
]
