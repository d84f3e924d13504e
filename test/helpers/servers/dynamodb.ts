/**
 * A DynamoDB for tests: dynalite (npm `dynalite`, a devDependency: an implementation of the
 * DynamoDB API on LevelDB) as its own Node.js process on 127.0.0.1:<free port>, its tables in
 * LevelDB files in the temporary directory, so that `kill()` and `restart()` behave as with
 * the other servers and a restart finds every item an answered request wrote. Any AWS
 * credentials are accepted: dynalite checks that a request is signed (SigV4's
 * `Authorization` header), not the signature.
 */
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { SERVER_HOST, spawnServer, type ServerProcess } from './core.js'

/** The region the handle names (dynalite serves every region alike). */
const REGION = 'us-east-1'

/** dynalite's command-line entry point (node_modules/dynalite/cli.js). */
export function dynaliteCli (): string {
  try {
    return createRequire(import.meta.url).resolve('dynalite/cli.js')
  } catch {
    throw new Error('dynalite is not installed: run `npm install` (it is a devDependency of Starling)')
  }
}

/** Options of {@link startDynamodb}. */
export interface DynamodbOptions {
  /**
   * How long a table stays CREATING, DELETING or UPDATING (ms; default 0: ACTIVE a moment after
   * `CreateTable` answered, never before, as with DynamoDB; dynalite's own default is 500,
   * DynamoDB's seconds). An item written to a table that is not ACTIVE yet is refused with
   * `ResourceNotFoundException`: {@link DynamodbServer.createTable} waits.
   */
  tableStateMs?: number
}

/** A running DynamoDB (dynalite). */
export interface DynamodbServer extends ServerProcess {
  /** `http://127.0.0.1:<port>`: what an AWS SDK client's `endpoint` takes. */
  readonly endpoint: string
  /** `us-east-1` (any region works). */
  readonly region: string
  /** Fake credentials for an AWS SDK client (any are accepted). */
  readonly credentials: { readonly accessKeyId: string, readonly secretAccessKey: string }
  /**
   * One DynamoDB API call over HTTP (`call('CreateTable', { TableName, KeySchema, ... })`,
   * `call('GetItem', ...)`), with the JSON protocol of DynamoDB_20120810; resolves with the
   * answer's JSON and throws with DynamoDB's `__type` and message on an error.
   */
  call: <T = Record<string, any>>(operation: string, body?: Record<string, unknown>) => Promise<T>
  /** `CreateTable` with `definition` (its `TableName`, `KeySchema` ...), resolved once the table is ACTIVE. */
  createTable: (definition: Record<string, unknown> & { TableName: string }) => Promise<void>
}

const credentials = { accessKeyId: 'starling-test', secretAccessKey: 'starling-test-secret' }

/** A DynamoDB JSON API call to 127.0.0.1:`port`, with a SigV4-shaped header dynalite accepts. */
async function dynamoCall<T> (port: number, operation: string, body: Record<string, unknown>, timeoutMs = 10_000): Promise<T> {
  const date = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '') // 20261127T185500Z
  const response = await fetch(`http://${SERVER_HOST}:${port}/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': `DynamoDB_20120810.${operation}`,
      'x-amz-date': date,
      authorization: `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${date.slice(0, 8)}/${REGION}/dynamodb/aws4_request, ` +
        'SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=0000'
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs)
  })
  const answer = await response.json() as T & { __type?: string, message?: string }
  if (response.status !== 200) {
    throw new Error(`DynamoDB ${operation} answered ${response.status}: ${answer.__type?.split('#').pop() ?? ''} ${answer.message ?? ''}`.trim())
  }
  return answer
}

/** Starts dynalite; see {@link DynamodbServer}. */
export async function startDynamodb (opts: DynamodbOptions = {}): Promise<DynamodbServer> {
  const cli = dynaliteCli()
  const stateMs = String(opts.tableStateMs ?? 0)
  const server = await spawnServer({
    name: 'DynamoDB',
    debianPackage: 'none (npm dynalite)',
    command: (ctx) => [process.execPath, cli, '--host', ctx.host, '--port', String(ctx.port), '--path', join(ctx.dir, 'data'),
      '--createTableMs', stateMs, '--deleteTableMs', stateMs, '--updateTableMs', stateMs],
    probe: async (ctx, timeoutMs) => { await dynamoCall(ctx.port, 'ListTables', {}, timeoutMs) }
  })
  return Object.assign(server, {
    endpoint: `http://${server.host}:${server.port}`,
    region: REGION,
    credentials,
    call: async <T = Record<string, any>>(operation: string, body: Record<string, unknown> = {}) =>
      await dynamoCall<T>(server.port, operation, body),
    createTable: async (definition: Record<string, unknown> & { TableName: string }) => {
      await dynamoCall(server.port, 'CreateTable', definition)
      const deadline = Date.now() + 10_000 + Number(stateMs)
      for (;;) {
        const { Table } = await dynamoCall<{ Table: { TableStatus: string } }>(server.port, 'DescribeTable', { TableName: definition.TableName })
        if (Table.TableStatus === 'ACTIVE') return
        if (Date.now() > deadline) throw new Error(`DynamoDB table ${definition.TableName} still ${Table.TableStatus}`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    }
  })
}
