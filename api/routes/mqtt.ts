/**
 * `/api/v3/mqtt/*` (spec: Publish, subscribe, unsubscribe): publish as a client, subscribe
 * and unsubscribe a connected client, and the three batch forms. Thin: bodies are checked
 * by their schema here, the work is in node/ops/mqtt-ops.ts. Choices: docs/api.md.
 */
import { defineRoutes, type ApiRequest, type JsonSchema, type RouteDef } from '../route-table.js'
import { toApiError } from '../../node/errors.js'
import {
  publishMessage, subscribeClient, unsubscribeClient, type PublishRequest, type SubscribeRequest
} from '../../node/ops/mqtt-ops.js'

const QOS: JsonSchema = { type: 'integer', enum: [0, 1, 2], description: '0, 1 or 2 (116 otherwise)' }
const TOPIC: JsonSchema = { type: 'string', description: 'topic name (publish) or topic filter (subscribe, unsubscribe); 115 when invalid' }
const TOPICS: JsonSchema = { type: 'string', description: 'several topics separated by commas (EMQ X), instead of or beside topic' }
const CLIENT_ID: JsonSchema = { type: 'string' }
/** `topic` or `topics` must be there (107 names `topic`). */
const SOME_TOPIC = [{ required: ['topic'] }, { required: ['topics'] }]
/** 115 and 116 for the rules of `topic` and `qos`; other broken rules are 108. */
const FIELD_CODES = { '/qos': 116, '/topic': 115, '/topics': 115 }

const PUBLISH_BODY: JsonSchema = {
  type: 'object',
  properties: {
    topic: TOPIC,
    topics: TOPICS,
    payload: { type: 'string', description: 'the message; default empty' },
    encoding: { type: 'string', enum: ['plain', 'base64'], description: 'how payload is written; default plain' },
    qos: QOS,
    retain: { type: 'boolean', description: 'default false' },
    client_id: { type: 'string', description: 'publish as this client id; default http' }
  },
  anyOf: SOME_TOPIC
}

const SUBSCRIBE_BODY: JsonSchema = {
  type: 'object',
  properties: { topic: TOPIC, topics: TOPICS, qos: QOS, client_id: CLIENT_ID },
  required: ['client_id'],
  anyOf: SOME_TOPIC
}

const UNSUBSCRIBE_BODY: JsonSchema = {
  type: 'object',
  properties: { topic: TOPIC, topics: TOPICS, client_id: CLIENT_ID },
  required: ['client_id'],
  anyOf: SOME_TOPIC
}

const publishRoute: RouteDef = {
  name: 'mqtt_publish',
  method: 'POST',
  path: '/mqtt/publish',
  descr: 'Publish a MQTT message (as client_id)',
  body: PUBLISH_BODY,
  fieldCodes: FIELD_CODES,
  handler: async (req) => { await publishMessage(req.node, req.body as PublishRequest); return undefined }
}

const subscribeRoute: RouteDef = {
  name: 'mqtt_subscribe',
  method: 'POST',
  path: '/mqtt/subscribe',
  descr: 'Subscribe a connected client to a topic filter',
  body: SUBSCRIBE_BODY,
  fieldCodes: FIELD_CODES,
  handler: async (req) => { await subscribeClient(req.node, req.body as SubscribeRequest); return undefined }
}

const unsubscribeRoute: RouteDef = {
  name: 'mqtt_unsubscribe',
  method: 'POST',
  path: '/mqtt/unsubscribe',
  descr: 'Unsubscribe a connected client from a topic filter',
  body: UNSUBSCRIBE_BODY,
  fieldCodes: FIELD_CODES,
  handler: async (req) => { await unsubscribeClient(req.node, req.body as SubscribeRequest); return undefined }
}

/** Text of `value` when it is a string, else null (for the per-item answers). */
function text (value: unknown): string | null {
  return typeof value === 'string' ? value : null
}

/**
 * The batch form of `single`: the body is an array of `single`'s bodies; each item is
 * checked and run on its own, in order, and answers its own code (0 or the error's), so a
 * bad item does not stop the others. `single`'s validator is compiled at the first batch
 * (validate.ts loads with the API's first request, not with the node).
 */
function batchOf (single: RouteDef, name: string, descr: string, answer: (item: any, code: number) => object): RouteDef {
  let validator: { check: ((body: unknown) => void) | null } | undefined
  return {
    name,
    method: 'POST',
    path: `${single.path}_batch`,
    descr,
    body: { type: 'array', description: `items as for ${single.path}; each gets its own code`, items: {} },
    handler: async (req: ApiRequest) => {
      validator ??= { check: (await import('../validate.js')).bodyValidator(single) }
      const validate = validator.check
      const data: object[] = []
      for (const item of req.body as unknown[]) {
        let code = 0
        try {
          validate?.(item)
          await single.handler({ ...req, body: item })
        } catch (err) {
          code = toApiError(err).code
        }
        data.push(answer(item, code))
      }
      return { data }
    }
  }
}

/** The publish / subscribe / unsubscribe endpoints and their batch forms. */
export const MQTT_ROUTES: RouteDef[] = defineRoutes([
  publishRoute,
  subscribeRoute,
  unsubscribeRoute,
  batchOf(publishRoute, 'mqtt_publish_batch', 'Publish MQTT messages in batch (a code per message)',
    (item, code) => ({ topic: text(item?.topic) ?? text(item?.topics), code })),
  batchOf(subscribeRoute, 'mqtt_subscribe_batch', 'Subscribe clients in batch (a code per subscription)',
    (item, code) => ({ client_id: text(item?.client_id), topic: text(item?.topic) ?? text(item?.topics), code })),
  batchOf(unsubscribeRoute, 'mqtt_unsubscribe_batch', 'Unsubscribe clients in batch (a code per item)',
    (item, code) => ({ client_id: text(item?.client_id), topic: text(item?.topic) ?? text(item?.topics), code }))
])
