/**
 * What the SQL backends (svc_backend_pgsql, svc_backend_mysql) share on top of the data kit:
 * the resource params of EMQ X 4.4 (`server`, `database`, `username`, `password`, TLS), the
 * pool options built from them (plugins/kit/pools/), the client writing batches through a
 * pool, and the `sql` action param compiled into bound parameters (node/template/sql.ts).
 *
 * Invariant: the SQL text sent is the compiled template's (or its multi-row form): values
 * only ever travel as bound parameters.
 */
import { isAbsolute, resolve } from 'node:path'
import { WrongTypeError } from '../../../node/errors.js'
import { configRoot } from '../../../node/config/index.js'
import { compileSql, DOLLAR_BRACES, lookup, type SqlDialect, type SqlTemplate } from '../../../node/template/index.js'
import { resourceTls, resourceTlsParams } from '../../../rules/resource-tls.js'
import type { ParamSpecs, ResourceComponents } from '../../../rules/types.js'
import { parseRedisServers } from '../pools/servers.js'
import type { SqlPool, SqlPoolOptions } from '../pools/sql-pool.js'
import { NotCommitted } from '../pools/sql-pool.js'
import { WriteRefused, WriteSkipped, type DataClient } from './client.js'
import { multiRowForm, multiRowText, type MultiRowForm } from './multi-row.js'
import type { DataActionSpec } from './definitions.js'

/** A value bound to a parameter. */
export type SqlValue = string | number | null

/** One buffered SQL write: the parameterized text and its rows of values. */
export interface SqlWrite {
  text: string
  rows: SqlValue[][]
}

/** Most bound parameters of one statement (PostgreSQL's and MySQL's limit is 65535). */
const MAX_PARAMS = 65_535
/** How long one statement (or transaction) may take, in ms. */
const QUERY_TIMEOUT_MS = 15_000
/** How long a new connection may take, in ms. */
const CONNECT_TIMEOUT_MS = 5000

/** The resource params of a SQL backend: EMQ X 4.4's names and defaults, with TLS. */
export function sqlResourceParams (product: string, defaults: { server: string, username: string }): ParamSpecs {
  return {
    server: { type: 'string', required: true, default: defaults.server, title: `${product} Server`, description: `The ${product} server, host:port` },
    database: { type: 'string', required: true, default: 'mqtt', title: 'Database', description: 'The database the actions write to' },
    username: { type: 'string', required: false, default: defaults.username, title: 'Username', description: `User name for ${product}` },
    password: { type: 'string', required: false, default: '', secret: true, title: 'Password', description: `Password for ${product}; shown as ******` },
    ...resourceTlsParams({ sslSwitch: true, verifyDefault: false })
  }
}

/** Refuses (108) a `server` that is not host:port. */
export function checkSqlServer (type: string, config: Record<string, unknown>, defaultPort: number): void {
  try {
    const servers = parseRedisServers(String(config.server), defaultPort)
    if (servers.length !== 1) throw new Error('give one server')
  } catch (err) {
    throw new WrongTypeError(`resource type ${type} config: parameter server must be host:port, got ${JSON.stringify(config.server)} (${(err as Error).message})`)
  }
  resourceTls(config)
}

/** The pool options of a SQL resource's config; relative TLS files are read from the configuration's root. */
export function sqlPoolOptionsOf (config: Record<string, unknown>, components: Pick<ResourceComponents, 'config'>, defaultPort: number): SqlPoolOptions {
  const [{ host, port }] = parseRedisServers(String(config.server), defaultPort)
  const tls = resourceTls(config)
  const root = configRoot(components.config)
  const file = (path: string | undefined): string | undefined => path === undefined ? undefined : isAbsolute(path) ? path : resolve(root, path)
  return {
    host,
    port,
    user: String(config.username ?? ''),
    password: String(config.password ?? ''),
    database: String(config.database),
    size: Number(config.pool_size ?? 8),
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
    queryTimeoutMs: QUERY_TIMEOUT_MS,
    tls: tls === undefined ? undefined : { ...tls, cacertfile: file(tls.cacertfile), certfile: file(tls.certfile), keyfile: file(tls.keyfile) }
  }
}

/** What a SQL backend says of its server beside the pool. */
export interface SqlClientSpec {
  dialect: SqlDialect
  /** `pgsql 127.0.0.1:5432`. */
  address: string
  /** Whether an error of the server or driver is about the connection (written again) rather than the rows (refused for good). */
  transient: (err: unknown) => boolean
}

/**
 * Consecutive writes of one statement text as one write, their rows in order (the buffer's
 * entries are not changed: a run of one write is itself, a longer run a new object). A buffer
 * send of single-row entries (batching off, or several actions' batches) then becomes one
 * multi-row INSERT instead of a statement per row; the send was all or none already (one
 * transaction), so nothing else changes.
 */
function coalesce (writes: readonly SqlWrite[]): SqlWrite[] {
  const out: SqlWrite[] = []
  for (let i = 0; i < writes.length;) {
    const text = writes[i].text
    let end = i + 1
    while (end < writes.length && writes[end].text === text) end++
    if (end === i + 1) {
      out.push(writes[i])
    } else {
      const rows: SqlValue[][] = []
      for (let j = i; j < end; j++) for (const r of writes[j].rows) rows.push(r)
      out.push({ text, rows })
    }
    i = end
  }
  return out
}

/** A {@link DataClient} writing {@link SqlWrite}s through `pool`. */
export function sqlDataClient (pool: SqlPool, spec: SqlClientSpec): DataClient<SqlWrite> {
  const forms = new Map<string, MultiRowForm | null>()
  const formOf = (text: string): MultiRowForm | undefined => {
    let form = forms.get(text)
    if (form === undefined) forms.set(text, form = multiRowForm(text, spec.dialect) ?? null)
    return form ?? undefined
  }
  // the last multi-row text of each form: a busy action sends the same number of rows again and again
  const lastText = new Map<MultiRowForm, { rows: number, text: string }>()
  const textOf = (form: MultiRowForm, rows: number): string => {
    const last = lastText.get(form)
    if (last?.rows === rows) return last.text
    const text = multiRowText(form, rows, spec.dialect)
    lastText.set(form, { rows, text })
    return text
  }
  const statements = (w: SqlWrite): Array<{ text: string, values: SqlValue[] }> => {
    const form = w.rows.length > 1 ? formOf(w.text) : undefined
    if (form === undefined) return w.rows.map((values) => ({ text: w.text, values }))
    const per = Math.max(1, Math.floor(MAX_PARAMS / form.params))
    const out: Array<{ text: string, values: SqlValue[] }> = []
    for (let i = 0; i < w.rows.length; i += per) {
      const end = Math.min(w.rows.length, i + per)
      // the rows' values one after another, without a slice and a flat() of them
      const values: SqlValue[] = []
      for (let r = i; r < end; r++) for (const v of w.rows[r]) values.push(v)
      out.push({ text: textOf(form, end - i), values })
    }
    return out
  }
  const refusedOrNot = (err: unknown): Error => {
    if (err instanceof NotCommitted) return new WriteSkipped()
    if (spec.transient(err)) return err as Error
    return new WriteRefused((err as Error)?.message ?? String(err), { cause: err })
  }
  const pipelined = pool.pipelined
  return {
    address: spec.address,
    connect: async () => { await pool.query('SELECT 1', []) },
    alive: async () => await pool.probe(),
    async write (writes) {
      const all = coalesce(writes).flatMap(statements)
      try {
        if (all.length === 1) await pool.query(all[0].text, all[0].values)
        else await pool.transaction(all)
      } catch (err) {
        throw refusedOrNot(err)
      }
    },
    writeAfter: pipelined === undefined
      ? undefined
      : async (writes, after) => {
        const all = coalesce(writes).flatMap(statements)
        try {
          await pipelined(all, after)
        } catch (err) {
          throw refusedOrNot(err)
        }
      },
    merge: (rows) => ({ text: rows[0].text, rows: rows.flatMap((r) => r.rows) }),
    split: (w) => w.rows.map((values) => ({ text: w.text, rows: [values] })),
    rows: (w) => w.rows.length,
    close: async () => { await pool.close() }
  }
}

/** A selected value as a bound parameter: objects as JSON, booleans as `boolean` says. */
export function sqlValue (value: unknown, boolean: (b: boolean) => SqlValue): SqlValue {
  if (value === undefined || value === null) return null
  if (typeof value === 'string') return value
  if (typeof value === 'number') return Number.isFinite(value) ? value : null
  if (typeof value === 'boolean') return boolean(value)
  if (typeof value === 'bigint') return value.toString()
  if (Buffer.isBuffer(value)) return value.toString('utf8')
  return JSON.stringify(value)
}

/** The `sql` param and the compile/row functions of a SQL action of `dialect`. */
export function sqlActionParts (dialect: SqlDialect, product: string, boolean: (b: boolean) => SqlValue): Pick<DataActionSpec<SqlWrite, SqlTemplate>, 'params' | 'compile' | 'row'> {
  return {
    params: {
      sql: {
        type: 'string', format: 'template', required: true, title: 'SQL Template',
        description: `The ${product} statement run for each message, with \${key} placeholders (\${payload.x} reads into a JSON payload); each is bound as a parameter, never pasted into the text: write it bare or as a whole string literal, e.g. insert into t_mqtt_msg(clientid, topic, payload) values (\${clientid}, \${topic}, \${payload})`
      }
    },
    compile: (params) => compileSql(String(params.sql ?? ''), {
      dialect,
      syntax: DOLLAR_BRACES,
      inLiteral: 'refuse',
      fail: (why) => { throw new WrongTypeError(`parameter sql cannot be used: ${why}`) }
    }),
    // renderSql's loop without its closure and query object: this runs once per row
    row: (template, selected) => {
      const params = template.params
      const values = new Array<SqlValue>(params.length)
      for (let i = 0; i < params.length; i++) values[i] = sqlValue(lookup(selected, params[i]), boolean)
      return { text: template.text, rows: [values] }
    }
  }
}
