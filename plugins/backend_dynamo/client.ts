/**
 * The client of `backend_dynamo`: the official AWS SDK v3 (`@aws-sdk/client-dynamodb`, loaded by
 * the first resource, not by every node), one `DynamoDBClient` per resource instance with a
 * keep-alive agent of `pool_size` sockets, SigV4 with the resource's access key.
 *
 * Invariants:
 * - The kit owns retries: the SDK makes one attempt per call (`maxAttempts` 1), so an outage is
 *   seen at once and the buffer, not the SDK, holds what waits.
 * - A write is `BatchWriteItem` requests of up to 25 puts, in order (item.ts's invariant: no
 *   two puts of one request share a key). Puts are idempotent (an item written again replaces
 *   itself), so a write sent again after a lost answer adds nothing; `UnprocessedItems`
 *   (throttling) are sent again, in their request, before the next request goes.
 * - An error DynamoDB answers about the items (`ValidationException`: a key of the wrong type,
 *   an item too large; `ResourceNotFoundException`: no such table) is a refusal for good
 *   ({@link WriteRefused}), which the kit splits to find the refused rows. An item without its
 *   key attributes is refused here, before any request, and named in `WriteRefused.rows`.
 *   Anything else (throttling, credentials refused, a 5xx, a connection error, no answer within
 *   {@link REQUEST_TIMEOUT_MS}) is transient: written again once connected.
 * - Nothing thrown or logged shows the secret access key.
 */
import type { DynamoDBClient as Client, WriteRequest } from '@aws-sdk/client-dynamodb'
import { Agent as HttpAgent } from 'node:http'
import { Agent as HttpsAgent } from 'node:https'
import { WriteRefused, pingHealth, type DataClient } from '../kit/data/index.js'
import { dynamoWrites, missingKey, requestsOf, type DynamoWrite, type Put } from './item.js'

/** How long one request may take, in ms. */
const REQUEST_TIMEOUT_MS = 15_000
/** How long a new connection may take, in ms. */
const CONNECT_TIMEOUT_MS = 5000
/** How often unprocessed items of one request are sent again before the write fails (transient). */
const UNPROCESSED_ROUNDS = 8
/** DynamoDB's errors about the items themselves. */
const REFUSALS = new Set(['ValidationException', 'ResourceNotFoundException', 'ItemCollectionSizeLimitExceededException', 'SerializationException'])

/** A resource's settings, read from its config. */
export interface DynamoSettings {
  /** The endpoint (`http://127.0.0.1:8000`), or undefined for AWS's endpoint of the region. */
  endpoint: string | undefined
  region: string
  accessKeyId: string
  secretAccessKey: string
  poolSize: number
}

/** The part of an SDK error worth showing: its name and message. */
function describe (err: unknown): string {
  const e = err as { name?: string, message?: string, code?: string }
  const name = e?.name !== undefined && e.name !== 'Error' ? `${e.name}: ` : ''
  return `${name}${e?.message ?? String(err)}`.slice(0, 500)
}

/** A {@link DataClient} writing items to DynamoDB (see the module's invariants). */
export async function dynamoClient (s: DynamoSettings): Promise<DataClient<DynamoWrite>> {
  const { DynamoDBClient, BatchWriteItemCommand, ListTablesCommand } = await import('@aws-sdk/client-dynamodb')
  const https = s.endpoint === undefined || s.endpoint.startsWith('https:')
  const agent = https
    ? new HttpsAgent({ keepAlive: true, maxSockets: s.poolSize })
    : new HttpAgent({ keepAlive: true, maxSockets: s.poolSize })
  const client: Client = new DynamoDBClient({
    region: s.region,
    endpoint: s.endpoint,
    credentials: { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey },
    maxAttempts: 1,
    requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS, ...(https ? { httpsAgent: agent } : { httpAgent: agent }) }
  })
  const address = `dynamodb ${s.endpoint ?? `${s.region} (AWS)`}`
  const why = (err: unknown): string => `${address}: ${describe(err)}`

  /** One request's puts, their unprocessed ones again until none is left. */
  const put = async (puts: readonly Put[]): Promise<void> => {
    let items: Record<string, WriteRequest[]> = {}
    for (const p of puts) (items[p.table] ??= []).push({ PutRequest: { Item: p.item.a as never } })
    for (let round = 0; Object.keys(items).length > 0; round++) {
      if (round === UNPROCESSED_ROUNDS) throw new Error(`${address}: items still unprocessed after ${UNPROCESSED_ROUNDS} tries (throughput exceeded)`)
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** round))
      let answer
      try {
        answer = await client.send(new BatchWriteItemCommand({ RequestItems: items }), { abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
      } catch (err) {
        if (REFUSALS.has((err as Error).name)) throw new WriteRefused(why(err), { cause: err })
        throw new Error(why(err), { cause: err })
      }
      items = answer.UnprocessedItems ?? {}
    }
  }

  const ping = async (): Promise<void> => {
    await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
  }

  return {
    address,
    // a signed call: checks the endpoint, the region and the credentials
    ...pingHealth(why, ping),
    async write (writes) {
      const puts: Put[] = []
      const refused: number[] = []
      let reason: string | undefined
      let row = 0
      for (const w of writes) {
        for (const item of w.i) {
          const missing = missingKey(w, item)
          if (missing === undefined) puts.push({ table: w.t, keys: w.k, item, row })
          else { refused.push(row); reason ??= missing }
          row++
        }
      }
      for (const request of requestsOf(puts)) await put(request)
      if (refused.length > 0) throw new WriteRefused(`${address}: ${reason as string}`, { rows: refused })
    },
    ...dynamoWrites,
    close: async () => {
      client.destroy()
      agent.destroy()
    }
  }
}
