/**
 * `svc_backend_dynamo` (EMQ X 4.4 Enterprise's DynamoDB integration): while loaded, the rule
 * engine has the resource type `backend_dynamo` and the action `data_to_dynamo`, which puts one
 * item per run (every selected field an attribute) into a table (docs/integrations.md). The
 * buffer, batching and retries are plugins/kit/data/'s; the items are item.ts's, the client
 * (the AWS SDK v3) client.ts's.
 */
import { WrongTypeError } from '../../node/errors.js'
import type { StarlingPlugin } from '../kit/parts.js'
import { dataAction, dataPlugin, dataResourceType } from '../kit/data/index.js'
import type { ActionDefinition, ResourceTypeDefinition } from '../../rules/types.js'
import { compileDynamoAction, dynamoRow, type DynamoAction, type DynamoWrite } from './item.js'
import type { DynamoSettings } from './client.js'

/** The plugin's name, and the `provider` of what it registers. */
export const DYNAMO_PLUGIN = 'svc_backend_dynamo'
const TYPE = 'backend_dynamo'

function refuse (key: string, why: string): never {
  throw new WrongTypeError(`resource type ${TYPE} config: parameter ${key} ${why}`)
}

/** A resource's settings (checked: 108). */
export function dynamoSettingsOf (config: Record<string, unknown>): DynamoSettings {
  const text = (key: string): string => typeof config[key] === 'string' ? (config[key] as string).trim() : ''
  const url = text('url')
  let endpoint: string | undefined
  if (url !== '') {
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      return refuse('url', `must be the endpoint's URL, such as http://127.0.0.1:8000, or empty for AWS's endpoint of the region, got ${JSON.stringify(config.url)}`)
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') refuse('url', `must start with http:// or https://, got ${JSON.stringify(config.url)}`)
    if (parsed.username !== '' || parsed.password !== '') refuse('url', 'must not hold credentials: they are aws_access_key_id and aws_secret_access_key')
    endpoint = parsed.origin
  }
  const region = text('region')
  if (!/^[a-z0-9-]+$/.test(region)) refuse('region', `must be an AWS region such as us-west-2, got ${JSON.stringify(config.region)}`)
  const accessKeyId = text('aws_access_key_id')
  if (accessKeyId === '') refuse('aws_access_key_id', 'must be the access key ID requests are signed with')
  const secretAccessKey = typeof config.aws_secret_access_key === 'string' ? config.aws_secret_access_key : ''
  if (secretAccessKey === '') refuse('aws_secret_access_key', 'must be the secret of the access key')
  return { endpoint, region, accessKeyId, secretAccessKey, poolSize: Number(config.pool_size ?? 8) }
}

/** `backend_dynamo`. */
export const BACKEND_DYNAMO: ResourceTypeDefinition = dataResourceType<DynamoWrite>({
  name: TYPE,
  provider: DYNAMO_PLUGIN,
  title: 'DynamoDB',
  description: 'Amazon DynamoDB (or a service speaking its API): rules put items into its tables (data_to_dynamo), buffered while it is away',
  params: {
    url: {
      type: 'string', required: false, default: '', secretParts: 'url', title: 'DynamoDB Server',
      description: 'The endpoint\'s URL, http://host:port or https://host:port (DynamoDB Local, a VPC endpoint); empty: AWS\'s endpoint of the region over HTTPS'
    },
    region: { type: 'string', required: true, default: 'us-west-2', title: 'AWS Region', description: 'The region the requests are signed for (and whose endpoint is used when url is empty)' },
    aws_access_key_id: { type: 'string', required: true, default: '', title: 'AWS Access Key Id', description: 'The access key ID the requests are signed with' },
    aws_secret_access_key: { type: 'string', required: true, default: '', secret: true, title: 'AWS Secret Access Key', description: 'The access key\'s secret; shown as ****** once stored' }
  },
  checkConfig (config) { dynamoSettingsOf(config) },
  async client (config) {
    const { dynamoClient } = await import('./client.js')
    return await dynamoClient(dynamoSettingsOf(config))
  }
})

/** `data_to_dynamo`. */
export const DATA_TO_DYNAMO: ActionDefinition = dataAction<DynamoWrite, DynamoAction>({
  name: 'data_to_dynamo',
  app: DYNAMO_PLUGIN,
  types: [TYPE],
  title: 'Data to DynamoDB',
  description: 'Put the selected data into a DynamoDB table, one item per message: every selected field an attribute',
  params: {
    table: { type: 'string', required: true, default: '', title: 'DynamoDB Table', description: 'The table the items are put into (it must exist)' },
    hash_key: {
      type: 'string', required: true, default: '', title: 'Hash Key',
      description: 'The table\'s partition key attribute: a field the rule selects (as a string or a number). An item without it is counted failed'
    },
    range_key: {
      type: 'string', required: false, default: '', title: 'Range Key',
      description: 'The table\'s sort key attribute, a selected field; empty when the table has none. An item with the keys of an earlier one replaces it'
    }
  },
  compile: compileDynamoAction,
  row: dynamoRow
})

/** The `svc_backend_dynamo` plugin: its type and action while loaded. */
export const svcBackendDynamo: StarlingPlugin = dataPlugin({ name: DYNAMO_PLUGIN, description: 'Starling DynamoDB data integration', type: 'backend', types: [BACKEND_DYNAMO], actions: [DATA_TO_DYNAMO] })
