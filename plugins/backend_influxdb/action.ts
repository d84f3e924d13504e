/**
 * `data_to_influxdb` (EMQ X 4.4 Enterprise's "Data to InfluxDB"): one point per message, its
 * measurement, fields and tags filled from the selected data, its timestamp from the
 * selection or the node's clock (line-protocol.ts, {@link nodeTimeNs}). The buffer,
 * batching (one write of many lines per batch) and retries are plugins/kit/data/'s.
 */
import { WrongTypeError } from '../../node/errors.js'
import { compileText, fillText, hasPlaceholder, lookup, renderText, renderValue, type TextTemplate } from '../../node/template/index.js'
import { dataAction } from '../kit/data/index.js'
import type { ActionDefinition } from '../../rules/types.js'
import { nodeTimeNsText, renderPoint, timestampOf, type FieldValue } from './line-protocol.js'
import type { InfluxWrite } from './write.js'

/** An action's params, checked. */
export interface InfluxActionTemplate {
  measurement: string
  fields: Array<[string, unknown]>
  tags: Array<[string, unknown]>
  /** '': the node's time; with `${`: a template; otherwise a key of the selection (EMQ X's "Timestamp Key"). */
  timestamp: string
  intSuffix: string
  /** The same, their placeholders found once (each row fills them). */
  compiled: {
    measurement: TextTemplate
    fields: Array<[TextTemplate, TextTemplate | unknown]>
    tags: Array<[TextTemplate, TextTemplate | unknown]>
    /** undefined: no template (the node's time, or a key). */
    timestamp: TextTemplate | undefined
  }
}

/** A field's or tag's name and value compiled: a string value is a template, other literals stay. */
function compileEntries (entries: Array<[string, unknown]>): Array<[TextTemplate, TextTemplate | unknown]> {
  return entries.map(([k, v]) => [compileText(k), typeof v === 'string' ? compileText(v) : v])
}

/** A compiled entry's value for `selected` (fillTemplate's rules: "${key}" keeps the value's type). */
function entryValue (v: TextTemplate | unknown, selected: Record<string, unknown>): unknown {
  return typeof v === 'object' && v !== null ? fillText(v as TextTemplate, selected) : v
}

function refuse (key: string, why: string): never {
  throw new WrongTypeError(`action data_to_influxdb: parameter ${key} ${why}`)
}

function entriesOf (key: string, value: unknown, required: boolean): Array<[string, unknown]> {
  if (value === undefined || value === null) {
    if (required) refuse(key, 'is required: an object of name -> ${key} template or literal')
    return []
  }
  if (typeof value !== 'object' || Array.isArray(value)) refuse(key, `must be an object of name -> \${key} template or literal, got ${JSON.stringify(value)}`)
  const entries = Object.entries(value as Record<string, unknown>)
  for (const [k, v] of entries) {
    if (k === '') refuse(key, 'has an empty name')
    if (!['string', 'number', 'boolean'].includes(typeof v)) refuse(`${key}.${k}`, `must be a \${key} template, a string, a number or a boolean`)
  }
  if (required && entries.length === 0) refuse(key, 'needs at least one field (a point without fields cannot be written)')
  return entries
}

/** Checks and reads an action's params (108 for ones that cannot work). */
export function compileInfluxAction (params: Record<string, unknown>): InfluxActionTemplate {
  const measurement = params.measurement
  if (typeof measurement !== 'string' || measurement.trim() === '') refuse('measurement', 'must be a non-empty string')
  const timestamp = params.timestamp ?? ''
  if (typeof timestamp !== 'string') refuse('timestamp', `must be a \${key} template, a key or empty, got ${JSON.stringify(timestamp)}`)
  const intSuffix = params.int_suffix ?? 'i'
  if (typeof intSuffix !== 'string' || !['i', ''].includes(intSuffix)) refuse('int_suffix', `must be "i" or "", got ${JSON.stringify(intSuffix)}`)
  const fields = entriesOf('fields', params.fields, true)
  const tags = entriesOf('tags', params.tags, false)
  const ts = timestamp.trim()
  return {
    measurement,
    fields,
    tags,
    timestamp: ts,
    intSuffix,
    compiled: {
      measurement: compileText(measurement),
      fields: compileEntries(fields),
      tags: compileEntries(tags),
      timestamp: hasPlaceholder(ts) ? compileText(ts) : undefined
    }
  }
}

/** A selected value as a field value; undefined leaves the field out. */
function fieldOf (v: unknown): FieldValue | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string' || typeof v === 'bigint') return v
  return renderValue(v)
}

/** The point of one run. */
export function influxRow (t: InfluxActionTemplate, selected: Record<string, unknown>): InfluxWrite {
  const c = t.compiled
  const fields: Array<[string, FieldValue]> = []
  for (const [k, template] of c.fields) {
    const v = fieldOf(entryValue(template, selected))
    if (v !== undefined) fields.push([renderText(k, selected), v])
  }
  const tags = new Array<[string, string]>(c.tags.length)
  for (let i = 0; i < tags.length; i++) tags[i] = [renderText(c.tags[i][0], selected), renderValue(entryValue(c.tags[i][1], selected))]
  const l = renderPoint({ measurement: renderText(c.measurement, selected), tags, fields, intSuffix: t.intSuffix })
  const raw = t.timestamp === '' ? undefined : c.timestamp !== undefined ? fillText(c.timestamp, selected) : lookup(selected, t.timestamp)
  const ts = timestampOf(raw)
  return { p: [ts === undefined ? { l, n: nodeTimeNsText() } : { l, t: ts }] }
}

/** `data_to_influxdb`. */
export function influxAction (app: string, types: string[]): ActionDefinition {
  return dataAction<InfluxWrite, InfluxActionTemplate>({
    name: 'data_to_influxdb',
    app,
    types,
    title: 'Data to InfluxDB',
    description: 'Write the selected data into InfluxDB as points (line protocol)',
    params: {
      measurement: {
        type: 'string', format: 'template', required: true, title: 'Measurement',
        description: 'The measurement of each point: a fixed name or ${key} placeholders'
      },
      fields: {
        type: 'object', required: true, schema: {}, title: 'Fields',
        description: 'Field name -> value: "${key}" keeps the selected value\'s type (an integer is written with int_suffix, a float, a boolean, a string; an object as its JSON text; absent: the field is left out), other text is a string with its placeholders filled, a number or boolean is written as it is'
      },
      tags: {
        type: 'object', required: false, default: {}, schema: {}, title: 'Tags',
        description: 'Tag name -> value: "${key}" placeholders or fixed text; a tag whose value is empty is left out'
      },
      timestamp: {
        type: 'string', required: false, default: '', title: 'Timestamp Key',
        description: 'The point\'s time, a whole number in the resource\'s precision: ${timestamp} (the message\'s, in ms: use precision ms), another ${key} or a key of the selection; empty: the node\'s clock when the message was matched, distinct for every point'
      },
      int_suffix: {
        type: 'string', enum: ['i', ''], required: false, default: 'i', title: 'Integer Suffix',
        description: '"i": whole numbers are written as InfluxDB integers (42i); "": as floats (a field that is sometimes 20 and sometimes 20.5 then keeps one type)'
      }
    },
    compile: compileInfluxAction,
    row: influxRow
  })
}
