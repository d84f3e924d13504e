/**
 * `starling-ctl broker | broker stats | broker metrics | clients list|show|kick |
 * sessions list|show | subscriptions list|show | routes list|show`: the command table
 * entries and how their results print. The node-side handlers are in
 * monitoring-ctl-handlers.ts. `--json` prints the results as the API returns them.
 */
import { defineCommand, type CtlCommand } from '../control/commands.js'
import { formatFields, formatTable, type TableColumn } from '../control/format.js'
import type { BrokerInfo } from './node-info.js'
import type { Connection } from './connections.js'
import type { Session } from './sessions.js'
import type { Route, Subscription } from './subscriptions.js'
import type { FailedNode } from '../rpc.js'
import { CODES } from '../errors.js'

const printOk = (): string => 'ok\n'

/**
 * What a cluster-wide list command answers: the items, or `{data, failed}` when some node
 * failed its part (the API's `meta.failed`). `--json` prints it as it is.
 */
export type CtlList<T> = T[] | { data: T[], failed: FailedNode[] }

/** `node <name>: badrpc: <message>`, one line per node that failed (101 is EMQ X's badrpc). */
function failedLines (failed: readonly FailedNode[]): string {
  return failed.map(f => `node ${f.node}: ${f.code === CODES.BADRPC ? 'badrpc' : `error ${f.code}`}: ${f.message}\n`).join('')
}

/** A renderer of a {@link CtlList}: `render` of the items, then a line per failed node. */
function listed<T> (render: (rows: T[]) => string): (result: CtlList<T>) => string {
  return (result) => Array.isArray(result) ? render(result) : render(result.data) + failedLines(result.failed)
}

/** `key : value` lines, EMQ X's `~-<width>s: ~w`, with no indent. */
function fieldLines (values: object, keyWidth: number): string {
  return formatFields(Object.entries(values), { indent: 0, keyWidth })
}

/** One `key : value` block per item, separated by a blank line. */
function blocks (items: readonly object[]): string {
  return items.map(item => fieldLines(item, 20)).join('\n')
}

const CLIENT_ID = { name: 'ClientId', description: 'the client id' }

/** `broker`: EMQ X's sysdescr, version, uptime and datetime lines for this node. */
export const brokerCommand = defineCommand<BrokerInfo>({
  words: ['broker'],
  description: 'Show the description, version, uptime and time of the node',
  render (info) {
    return fieldLines({ sysdescr: info.sysdescr, version: info.version, uptime: info.uptime, datetime: info.datetime }, 10)
  }
})

/** `broker stats`: the node's Stats, one `name : value` line each. */
export const brokerStatsCommand = defineCommand<Record<string, number>>({
  words: ['broker', 'stats'],
  description: 'Show the stats of the node (connections, sessions, subscriptions, routes ...)',
  render: (stats) => fieldLines(stats, 30)
})

/** `broker metrics`: the node's Metrics, one `name : value` line each. */
export const brokerMetricsCommand = defineCommand<Record<string, number>>({
  words: ['broker', 'metrics'],
  description: 'Show the metrics of the node (bytes, packets, messages)',
  render: (metrics) => fieldLines(metrics, 30)
})

const CONNECTION_COLUMNS: ReadonlyArray<TableColumn<Connection>> = [
  { key: 'client_id' },
  { key: 'username' },
  { key: 'ipaddress', header: 'peername', format: (_v, c) => `${c.ipaddress}:${c.port}` },
  { key: 'proto_ver' },
  { key: 'clean_start' },
  { key: 'keepalive' },
  { key: 'connected_at' },
  { key: 'node' }
]

/** `clients list`: a table of the connections of every node. */
export const clientsListCommand = defineCommand<CtlList<Connection>>({
  words: ['clients', 'list'],
  description: 'List the connected clients of every node',
  render: listed((rows) => formatTable(rows, CONNECTION_COLUMNS, { empty: 'No clients' }))
})

/** `clients show <ClientId>`: every field of the client's connection. */
export const clientsShowCommand = defineCommand<CtlList<Connection>>({
  words: ['clients', 'show'],
  description: 'Show the connection of a client',
  args: [CLIENT_ID],
  render: listed(blocks)
})

/** `clients kick <ClientId>`: prints `ok`; fails (code 112) when the client is not online. */
export const clientsKickCommand = defineCommand<string>({
  words: ['clients', 'kick'],
  description: 'Kick out a client, wherever it is connected',
  args: [CLIENT_ID],
  render: printOk
})

const SESSION_COLUMNS: ReadonlyArray<TableColumn<Session>> = [
  { key: 'client_id' },
  { key: 'username' },
  { key: 'clean_start' },
  { key: 'expiry_interval' },
  { key: 'subscriptions_count', header: 'subscriptions' },
  { key: 'inflight_len', header: 'inflight' },
  { key: 'mqueue_len', header: 'mqueue' },
  { key: 'created_at' },
  { key: 'node' }
]

/** `sessions list`: a table of the sessions of every node (connected and away). */
export const sessionsListCommand = defineCommand<CtlList<Session>>({
  words: ['sessions', 'list'],
  description: 'List the sessions of every node, persistent sessions of away clients included',
  render: listed((rows) => formatTable(rows, SESSION_COLUMNS, { empty: 'No sessions' }))
})

/** `sessions show <ClientId>`: every field of the client's session. */
export const sessionsShowCommand = defineCommand<CtlList<Session>>({
  words: ['sessions', 'show'],
  description: 'Show the session of a client',
  args: [CLIENT_ID],
  render: listed(blocks)
})

const SUBSCRIPTION_COLUMNS: ReadonlyArray<TableColumn<Subscription>> = [{ key: 'client_id' }, { key: 'topic' }, { key: 'qos' }, { key: 'node' }]

/** `subscriptions list`: a table of every subscription of every node. */
export const subscriptionsListCommand = defineCommand<CtlList<Subscription>>({
  words: ['subscriptions', 'list'],
  description: 'List the subscriptions of every node',
  render: listed((rows) => formatTable(rows, SUBSCRIPTION_COLUMNS, { empty: 'No subscriptions' }))
})

/** `subscriptions show <ClientId>`: a table of a client's subscriptions. */
export const subscriptionsShowCommand = defineCommand<CtlList<Subscription>>({
  words: ['subscriptions', 'show'],
  description: 'List the subscriptions of a client',
  args: [CLIENT_ID],
  render: listed((rows) => formatTable(rows, SUBSCRIPTION_COLUMNS, { empty: 'No subscriptions' }))
})

const ROUTE_COLUMNS: ReadonlyArray<TableColumn<Route>> = [{ key: 'topic' }, { key: 'node' }]

/** `routes list`: the cluster's route table. */
export const routesListCommand = defineCommand<CtlList<Route>>({
  words: ['routes', 'list'],
  description: 'List the routes: topic filters and the nodes with subscribers to them',
  render: listed((rows) => formatTable(rows, ROUTE_COLUMNS, { empty: 'No routes' }))
})

/** `routes show <Topic>`: the routes of one topic filter. */
export const routesShowCommand = defineCommand<CtlList<Route>>({
  words: ['routes', 'show'],
  description: 'Show the routes of a topic filter',
  args: [{ name: 'Topic', description: 'the topic filter, e.g. t/#' }],
  render: listed((rows) => formatTable(rows, ROUTE_COLUMNS, { empty: 'No routes' }))
})

/** Every monitoring command, for the ctl command table (`broker` before its subcommands). */
export const MONITORING_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  brokerCommand, brokerStatsCommand, brokerMetricsCommand,
  clientsListCommand, clientsShowCommand, clientsKickCommand,
  sessionsListCommand, sessionsShowCommand,
  subscriptionsListCommand, subscriptionsShowCommand,
  routesListCommand, routesShowCommand
]
