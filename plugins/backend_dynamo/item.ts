/**
 * What a DynamoDB resource buffers and writes: one item per run, every selected field an
 * attribute in DynamoDB's typed form (`{"S": "..."}`, `{"N": "..."}` ...), with the action's
 * table and key attribute names, so that a buffered write needs nothing of the action to be
 * written after a restart.
 *
 * Invariant: within one `BatchWriteItem` request no two puts have the same table and key
 * (DynamoDB refuses such a request whole): {@link requestsOf} starts a new request instead, so
 * the later put still lands after the earlier one, as two single puts would.
 */
import { WrongTypeError } from '../../node/errors.js'
import { hasPlaceholder } from '../../node/template/index.js'

/** A DynamoDB attribute value (the low-level API's JSON form). */
export type AttributeValue =
  | { S: string } | { N: string } | { BOOL: boolean } | { NULL: true }
  | { M: Record<string, AttributeValue> } | { L: AttributeValue[] }

/** One item as the buffer keeps it. */
export interface DynamoItem {
  /** The attributes. */
  a: Record<string, AttributeValue>
}

/** One buffered write (JSON-encodable): the table, its key attribute names and the items, in order. */
export interface DynamoWrite {
  t: string
  /** The hash key's name, then the range key's when the action has one. */
  k: string[]
  i: DynamoItem[]
}

/** A compiled `data_to_dynamo` action. */
export interface DynamoAction {
  table: string
  keys: string[]
}

/** A selected value as a DynamoDB attribute (numbers not finite, and undefined, as NULL). */
export function attributeOf (v: unknown): AttributeValue {
  if (v === null || v === undefined) return { NULL: true }
  if (typeof v === 'string') return { S: v }
  if (typeof v === 'number') return Number.isFinite(v) ? { N: String(v) } : { NULL: true }
  if (typeof v === 'bigint') return { N: v.toString() }
  if (typeof v === 'boolean') return { BOOL: v }
  if (Buffer.isBuffer(v)) return { S: v.toString('utf8') }
  if (Array.isArray(v)) return { L: v.map(attributeOf) }
  if (typeof v === 'object') return { M: Object.fromEntries(Object.entries(v).map(([k, x]) => [k, attributeOf(x)])) }
  return { S: String(v) }
}

/** DynamoDB's rule for a table name: 3 to 255 of `a-z A-Z 0-9 _ - .`. */
const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/

/** Reads (and checks: 108) the action's params. */
export function compileDynamoAction (params: Record<string, unknown>): DynamoAction {
  const refuse = (key: string, why: string): never => { throw new WrongTypeError(`action data_to_dynamo: parameter ${key} ${why}`) }
  const text = (key: string): string => typeof params[key] === 'string' ? (params[key] as string).trim() : ''
  const table = text('table')
  if (!TABLE_NAME.test(table)) refuse('table', `must name a DynamoDB table (3 to 255 letters, digits, _ - .), got ${JSON.stringify(params.table)}`)
  const hash = text('hash_key')
  if (hash === '') refuse('hash_key', 'must name the table\'s partition (hash) key attribute, a field the rule selects')
  const range = text('range_key')
  for (const [key, v] of [['table', table], ['hash_key', hash], ['range_key', range]]) {
    if (hasPlaceholder(v)) refuse(key, 'names an attribute or a table and cannot hold a ${key} placeholder')
  }
  if (range === hash) refuse('range_key', 'must differ from hash_key')
  return { table, keys: range === '' ? [hash] : [hash, range] }
}

/** The write of one run: every selected field an attribute. */
export function dynamoRow (action: DynamoAction, selected: Record<string, unknown>): DynamoWrite {
  const a: Record<string, AttributeValue> = {}
  for (const [k, v] of Object.entries(selected)) {
    if (v !== undefined) a[k] = attributeOf(v)
  }
  return { t: action.table, k: action.keys, i: [{ a }] }
}

/** The kit's merge, split and row count of {@link DynamoWrite}s (of one action: one table). */
export const dynamoWrites = {
  merge: (rows: readonly DynamoWrite[]): DynamoWrite => ({ t: rows[0].t, k: rows[0].k, i: rows.flatMap((w) => w.i) }),
  split: (w: DynamoWrite): DynamoWrite[] => w.i.map((i) => ({ t: w.t, k: w.k, i: [i] })),
  rows: (w: DynamoWrite): number => w.i.length
}

/** Why an item cannot be written (a key attribute absent, or not a string or number), or undefined. */
export function missingKey (w: DynamoWrite, item: DynamoItem): string | undefined {
  for (const key of w.k) {
    const v = item.a[key]
    if (v === undefined || !('S' in v || 'N' in v)) return `key attribute ${JSON.stringify(key)} of table ${w.t} is ${v === undefined ? 'not selected' : 'not a string or a number'}`
  }
  return undefined
}

/** A put of one `BatchWriteItem` request: its table, the table's key names, the item and its row number (across the writes). */
export interface Put { table: string, keys: string[], item: DynamoItem, row: number }

/** The table and key values of a put: two puts with the same one write the same item. */
export function identityOf (p: Put): string {
  return JSON.stringify([p.table, ...p.keys.map((k) => p.item.a[k])])
}

/** At most this many puts per `BatchWriteItem` (DynamoDB's limit). */
export const PUTS_PER_REQUEST = 25

/** The puts of `puts` as requests, in order, keeping the invariant of the module. */
export function requestsOf (puts: readonly Put[]): Put[][] {
  const requests: Put[][] = []
  let current: Put[] = []
  let seen = new Set<string>()
  for (const p of puts) {
    const id = identityOf(p)
    if (current.length === PUTS_PER_REQUEST || seen.has(id)) {
      requests.push(current)
      current = []
      seen = new Set()
    }
    current.push(p)
    seen.add(id)
  }
  if (current.length > 0) requests.push(current)
  return requests
}
