/**
 * The client of `backend_mongo_single|_rs|_sharded`: the official `mongodb` driver through the
 * kit's MongoDB pool (plugins/kit/pools/mongo.ts, shared with svc_auth_mongo), loaded by the
 * first resource, one `MongoClient` per resource instance.
 *
 * Invariants:
 * - A write is one ordered `insertMany` per run of writes for the same collection, in order.
 * - A document MongoDB refuses (a write error: validation, a duplicate key of the user's own)
 *   is refused for good and named in `WriteRefused.rows`; the documents after it are inserted
 *   on. A duplicate key on `_id` of a document whose `_id` Starling chose means it was inserted
 *   by an earlier try whose answer was lost: it counts as written, so a write sent again adds
 *   no second copy.
 * - Anything else (no server to select, a network error, not primary, a write concern error)
 *   is transient: the write is sent again once connected.
 * - Nothing thrown or logged shows the password.
 */
import type { MongoClient } from 'mongodb'
import { WriteRefused, pingHealth, type DataClient } from '../kit/data/index.js'
import type { MongoPoolOptions } from '../kit/pools/mongo.js'
import { mongoWrites, type MongoWrite } from './document.js'


/** A {@link DataClient} inserting documents into MongoDB (see the module's invariants). */
export async function mongoClient (opts: MongoPoolOptions, database: string): Promise<DataClient<MongoWrite>> {
  const { MongoBulkWriteError, ObjectId } = await import('mongodb')
  const { createMongoClient, mongoUrl } = await import('../kit/pools/mongo.js')
  const client: MongoClient = createMongoClient(opts)
  const db = client.db(database)
  const address = `mongodb ${mongoUrl(opts)}${database}`
  const why = (err: unknown): string => `${address}: ${(err as Error)?.message ?? String(err)}`
  // bounded by the pool's serverSelectionTimeoutMS and socketTimeoutMS (plugins/kit/pools/mongo.ts)
  const ping = async (): Promise<void> => { await db.command({ ping: 1 }) }

  return {
    address,
    ...pingHealth(why, ping, async () => await client.connect()),
    async write (writes) {
      const refused: number[] = []
      let reason: string | undefined
      let row = 0
      for (let i = 0; i < writes.length;) {
        const c = writes[i].c
        const docs: Array<{ doc: Record<string, unknown>, ours: boolean, row: number }> = []
        for (; i < writes.length && writes[i].c === c; i++) {
          for (const d of writes[i].d) docs.push({ doc: d.i === undefined ? { ...d.d } : { _id: new ObjectId(d.i), ...d.d }, ours: d.i !== undefined, row: row++ })
        }
        const collection = db.collection(c)
        for (let from = 0; from < docs.length;) {
          try {
            await collection.insertMany(docs.slice(from).map((x) => x.doc), { ordered: true })
            from = docs.length
          } catch (err) {
            const first = err instanceof MongoBulkWriteError ? [err.writeErrors].flat()[0] : undefined
            if (first === undefined) throw new Error(why(err), { cause: err })
            const at = from + first.index
            const again = first.code === 11000 && docs[at].ours && /index: _id_/.test(first.errmsg ?? '')
            if (!again) {
              refused.push(docs[at].row)
              reason ??= `${address}: ${first.errmsg ?? `write error ${first.code}`}`
            }
            from = at + 1
          }
        }
      }
      if (refused.length > 0) throw new WriteRefused(reason as string, { rows: refused })
    },
    ...mongoWrites,
    close: async () => { await client.close() }
  }
}
