/**
 * A data-integration backend's resource type and action from a few lines of its own
 * (docs/integrations.md, "Adding a backend"): the backend says how to build its client from a
 * resource's config, how to check an action's params and how to turn selected data into one
 * row; the kit adds the shared params, the reachability probe at creation, the instance per
 * node (data-resource.ts), batching and the metrics' outcome.
 */
import type { ActionDefinition, ParamSpecs, ResourceComponents, ResourceTypeDefinition } from '../../../rules/types.js'
import type { DataClient } from './client.js'
import { DataResource } from './data-resource.js'
import { DATA_BATCH_PARAMS, DATA_RESOURCE_PARAMS, dataBatchSettings, dataResourceSettings, type DataBatchSettings, type DataResourceSettings, type InsertMode } from './params.js'

/** What {@link dataResourceType} is given by a backend. */
export interface DataResourceTypeSpec<W> {
  name: string
  /** The plugin providing it (`svc_backend_pgsql`). */
  provider: string
  title: string
  description: string
  /** The backend's own params (address, credentials, TLS); the kit adds {@link DATA_RESOURCE_PARAMS}. */
  params: ParamSpecs
  /**
   * Shared params the type does not have (a Redis cluster client reconnects by itself:
   * no `auto_reconnect`); read as their defaults.
   */
  without?: ReadonlyArray<keyof typeof DATA_RESOURCE_PARAMS>
  /** Checks the backend's own params beyond their specs (throws a 108). */
  checkConfig?: (config: Record<string, unknown>) => void
  /**
   * The resource's own sync deadline (ms) from its config (EMQ X 4.4's Kafka resource has
   * `sync_timeout`): its actions' sync mode waits this long instead of their `sync_timeout`.
   */
  syncTimeoutOf?: (config: Record<string, unknown>) => number
  /** A client for `config` (its driver loaded here, at the first use); it connects when asked. */
  client: (config: Record<string, unknown>, components: ResourceComponents) => Promise<DataClient<W>>
}

function sharedParams (without: readonly string[]): ParamSpecs {
  return Object.fromEntries(Object.entries(DATA_RESOURCE_PARAMS).filter(([key]) => !without.includes(key)))
}

/**
 * A data resource type: a {@link ResourceTypeDefinition} that also builds its backend's bare
 * client (the kit's buffer and batching left out), for the ceiling of bench/integrations.ts.
 */
export interface DataResourceTypeDefinition<W = unknown> extends ResourceTypeDefinition {
  dataClient: (config: Record<string, unknown>, components: ResourceComponents) => Promise<DataClient<W>>
}

/** A data action: an {@link ActionDefinition} that also gives the row of its params and a selection (bench/integrations.ts). */
export interface DataActionDefinition<W = unknown> extends ActionDefinition {
  rowOf: (params: Record<string, unknown>) => (selected: Record<string, unknown>) => W
}

/** A resource type whose resources run a {@link DataResource} on each node. */
export function dataResourceType<W> (spec: DataResourceTypeSpec<W>): DataResourceTypeDefinition<W> {
  const what = `resource type ${spec.name} config`
  const shared = sharedParams(spec.without ?? [])
  const settingsOf = (config: Record<string, unknown>): DataResourceSettings => {
    const own = { ...config }
    for (const key of spec.without ?? []) delete own[key]
    const settings = dataResourceSettings({ ...Object.fromEntries(Object.entries(DATA_RESOURCE_PARAMS).map(([k, p]) => [k, p.default])), ...own }, what)
    return spec.syncTimeoutOf === undefined ? settings : { ...settings, syncTimeoutMs: spec.syncTimeoutOf(config) }
  }
  return {
    name: spec.name,
    provider: spec.provider,
    title: spec.title,
    description: spec.description,
    params: { ...spec.params, ...shared },
    dataClient: spec.client,
    checkConfig (config) {
      settingsOf(config)
      spec.checkConfig?.(config)
    },
    async probe (config, components, signal) {
      const client = await spec.client(config, components)
      try {
        await Promise.race([
          client.connect(),
          new Promise<never>((_resolve, reject) => {
            if (signal.aborted) reject(new Error('no answer in time'))
            signal.addEventListener('abort', () => reject(new Error('no answer in time')), { once: true })
          })
        ])
      } finally {
        await client.close().catch(() => {})
      }
    },
    async open (resource, components) {
      const client = await spec.client(resource.config, components)
      return await DataResource.open({
        id: resource.id,
        client,
        settings: settingsOf(resource.config),
        dataDir: components.dataDir,
        logger: components.logger.child({ resource_id: resource.id })
      })
    }
  }
}

/** What {@link dataAction} is given by a backend. */
export interface DataActionSpec<W, C> {
  name: string
  /** The plugin providing it. */
  app: string
  /** The resource types it binds to. */
  types: string[]
  title: string
  description: string
  /** The backend's own params (`sql`); the kit adds `$resource` and {@link DATA_BATCH_PARAMS}. */
  params: ParamSpecs
  /**
   * Batch params the action does not have (OpenTSDB's `sync_timeout` is the server's own, so
   * the action has no `insert_mode` and no kit `sync_timeout`); read as their defaults.
   */
  without?: ReadonlyArray<keyof typeof DATA_BATCH_PARAMS>
  /**
   * The insert mode under the action's own name (EMQ X 4.4's Kafka action calls it `type`),
   * for an action `without` the kit's `insert_mode`; read from checked params.
   */
  modeOf?: (params: Record<string, unknown>) => InsertMode
  /** See {@link ActionDefinition.resourceConfigOf}. */
  resourceConfigOf?: (params: Record<string, unknown>) => Record<string, unknown>
  /** Compiles the action's params (its template); throws a 108 for ones that cannot be used. */
  compile: (params: Record<string, unknown>) => C
  /** The row of one run, from the compiled params and the selected data. */
  row: (compiled: C, selected: Record<string, unknown>) => W
}

/**
 * An action writing one row per run through a data resource. Its run resolves when the row
 * counts as success and rejects when it counts as failed (data-resource.ts); it runs off the
 * delivery path (rules/runtime.ts), so neither ever holds up a subscriber. With the resource's
 * local buffer, or in `insert_mode` sync, it holds the QoS 1/2 publish that triggered it
 * (`holdsPublish`) until then: a publisher's PUBACK means the row is on disk (buffer), or
 * written or counted failed within `sync_timeout` (sync).
 */
export function dataAction<W, C> (spec: DataActionSpec<W, C>): DataActionDefinition<W> {
  const what = `action ${spec.name}`
  const without: readonly string[] = spec.without ?? []
  const shared = Object.fromEntries(Object.entries(DATA_BATCH_PARAMS).filter(([key]) => !without.includes(key)))
  const defaults = Object.fromEntries(without.map((key) => [key, DATA_BATCH_PARAMS[key].default]))
  const modeOf = spec.modeOf
  const batchOf = (params: Record<string, unknown>): DataBatchSettings => {
    const batch = dataBatchSettings({ ...params, ...defaults }, what)
    return modeOf === undefined ? batch : { ...batch, mode: modeOf(params) }
  }
  return {
    rowOf: (params) => {
      const compiled = spec.compile(params)
      return (selected) => spec.row(compiled, selected)
    },
    name: spec.name,
    aliases: spec.types.map((t) => `${t}:${spec.name}`),
    app: spec.app,
    for: '$any',
    types: spec.types,
    title: spec.title,
    description: spec.description,
    params: {
      $resource: { type: 'string', required: true, title: 'Resource ID', description: `Bind a resource to this action (of type ${spec.types.join(' or ')})` },
      ...spec.params,
      ...shared
    },
    check (params) {
      batchOf(params)
      spec.compile(params)
    },
    // a run settles once the row is on disk (local buffer), or written or failed within
    // sync_timeout (sync mode): the publisher's PUBACK waits for it (EMQ X 4.4's sync runs
    // the write inside the publish hook); async mode without the buffer never holds
    ...(spec.resourceConfigOf !== undefined ? { resourceConfigOf: spec.resourceConfigOf } : {}),
    holdsPublish: (params, resource) => resource?.config.local_buffer === true ||
      (modeOf !== undefined ? modeOf(params) === 'sync' : !without.includes('insert_mode') && params.insert_mode === 'sync'),
    // the row path (rules/runtime.ts): a run is the row and the batcher, no promise of its own
    rowWriter (params, instance, actionId) {
      if (!(instance instanceof DataResource)) return undefined
      const resource = instance as DataResource<W>
      const { compiled, batch } = resource.cached(`action:${actionId}`, () => ({ compiled: spec.compile(params), batch: batchOf(params) }))
      const add = resource.rowWriter(actionId, batch)
      return (selected, settle) => { add(spec.row(compiled, selected), settle) }
    },
    async run (selected, ctx) {
      const instance = await ctx.instance()
      if (!(instance instanceof DataResource)) throw new Error(`resource ${String(ctx.params.$resource)} is not running on this node`)
      const resource = instance as DataResource<W>
      const key = ctx.actionId
      const { compiled, batch } = resource.cached(`action:${key}`, () => ({ compiled: spec.compile(ctx.params), batch: batchOf(ctx.params) }))
      await resource.write(key, batch, spec.row(compiled, selected))
    }
  }
}
