/**
 * What a MongoDB resource buffers and writes: documents for one collection, each the selected
 * data (or the action's `payload_tmpl`, a JSON template, filled), with an `_id` chosen when the
 * action ran unless the document has its own, so that a document written again after a lost
 * answer is known by its `_id` (duplicate key on `_id`: it is already there).
 */
import { randomBytes } from 'node:crypto'
import { WrongTypeError } from '../../node/errors.js'
import { fillTemplate, hasPlaceholder } from '../../node/template/index.js'

/** One document: `d` the document; `i` the `_id` Starling chose (24 hex digits, an ObjectId), when it chose one. */
export interface MongoDocument { d: Record<string, unknown>, i?: string }

/** One buffered write (JSON-encodable): the collection and its documents, in order. */
export interface MongoWrite { c: string, d: MongoDocument[] }

/** A compiled `data_to_mongo` action. */
export interface MongoAction {
  collection: string
  /** The parsed JSON template, or undefined: the selected data. */
  template: Record<string, unknown> | undefined
}

/** Reads (and checks: 108) the action's params. */
export function compileMongoAction (params: Record<string, unknown>): MongoAction {
  const refuse = (key: string, why: string): never => { throw new WrongTypeError(`action data_to_mongo: parameter ${key} ${why}`) }
  const collection = typeof params.collection === 'string' ? params.collection.trim() : ''
  if (hasPlaceholder(collection)) refuse('collection', 'cannot hold a ${key} placeholder: documents of one action go to one collection')
  if (collection === '' || collection.startsWith('system.') || collection.includes('$') || collection.includes('\0')) {
    refuse('collection', `must name a collection (not system.*, no $), got ${JSON.stringify(params.collection)}`)
  }
  const text = String(params.payload_tmpl ?? '').trim()
  if (text === '') return { collection, template: undefined }
  let template: unknown
  try {
    template = JSON.parse(text)
  } catch (err) {
    return refuse('payload_tmpl', `must be a JSON object with \${key} placeholders in its strings, such as {"client": "\${clientid}", "temp": "\${payload.temp}"} (${(err as Error).message})`)
  }
  if (template === null || typeof template !== 'object' || Array.isArray(template)) refuse('payload_tmpl', 'must be a JSON object (one document)')
  return { collection, template: template as Record<string, unknown> }
}

/** The write of one run. */
export function mongoRow (action: MongoAction, selected: Record<string, unknown>): MongoWrite {
  const d = (action.template === undefined ? { ...selected } : fillTemplate(action.template, selected)) as Record<string, unknown>
  for (const k of Object.keys(d)) if (d[k] === undefined) delete d[k]
  return { c: action.collection, d: [d._id === undefined ? { d, i: objectIdHex() } : { d }] }
}

let counter = randomBytes(3).readUIntBE(0, 3)
const processBytes = randomBytes(5).toString('hex')

/** A new ObjectId's 24 hex digits: seconds, 5 random bytes of this process, a counter. */
export function objectIdHex (): string {
  counter = (counter + 1) % 0xffffff
  return Math.floor(Date.now() / 1000).toString(16).padStart(8, '0') + processBytes + counter.toString(16).padStart(6, '0')
}

/** The kit's merge, split and row count of {@link MongoWrite}s (of one action). */
export const mongoWrites = {
  merge: (rows: readonly MongoWrite[]): MongoWrite => ({ c: rows[0].c, d: rows.flatMap((w) => w.d) }),
  split: (w: MongoWrite): MongoWrite[] => w.d.map((d) => ({ c: w.c, d: [d] })),
  rows: (w: MongoWrite): number => w.d.length
}
