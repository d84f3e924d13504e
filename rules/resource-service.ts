/**
 * Resources (spec: Resource, Endpoints/Rule engine: resources): instances of a resource type
 * holding connection configuration, created by the API or the CLI, kept in the store table
 * `resources`. The config is checked against the type's `params` (107 missing, 108 wrong
 * type); a resource a rule uses cannot be deleted. `status` runs the type's health check now.
 *
 * Resources are cluster-wide (docs/cluster-data.md): given a shared table, one created,
 * changed or deleted on another node is added, replaced or removed here too. Most resources
 * are configuration only (actions read it when they run) and their health is checked by
 * `status`, on whichever node asks; a type with `open` (a bridge) runs an instance on each
 * node, which `changed` tells the engine to follow (resource-instances.ts), and its status is
 * that instance's.
 */
import { randomBytes } from 'node:crypto'
import type { StoreTable } from '../node/store/index.js'
import type { SharedTable } from '../node/store/shared.js'
import type { Logger } from '../node/logger.js'
import type { SerialQueue } from './serial-queue.js'
import { MissingParameterError, RefusedError, WrongTypeError, notFound } from '../node/errors.js'
import type { ActionRegistry } from './registry.js'
import { checkParams } from './params.js'
import { restoreParams } from './views.js'
import { NAME_PATTERN } from './rule-service.js'
import type { Resource, ResourceComponents, ResourceTypeDefinition, Rule } from './types.js'

/** What creating a resource takes (named or short variant). */
export interface ResourceInput {
  name?: string
  type: string
  config?: Record<string, unknown>
  description?: string
}

/** What changing a resource takes: its whole new config and/or description (type and name stay). */
export interface ResourcePatch {
  config?: Record<string, unknown>
  description?: string
}

/** A resource's health on one node (`status` in the CLI and the API). */
export interface ResourceStatus {
  is_alive: boolean
}

/** How long a health check may take. */
export const HEALTH_CHECK_TIMEOUT_MS = 5000
/** How long the reachability probe of a create or change may take. */
export const PROBE_TIMEOUT_MS = 10_000

/** What the resource service needs. */
export interface ResourceServiceInit {
  /** The resources; a shared table (`node.shared`) also brings other nodes' changes. */
  table: StoreTable<Resource> & Partial<Pick<SharedTable<Resource>, 'onRemoteChange'>>
  /** Where other nodes' changes are logged (default: not logged). */
  logger?: Logger
  registry: ActionRegistry
  /** The rules bound to a resource (deleting it is refused while there are some). */
  usedBy: (resourceId: string) => Rule[]
  /** Shared with the rule service: writes run one at a time. */
  queue: SerialQueue
  /**
   * Called after resource `id` was created, replaced (another node) or deleted (`undefined`);
   * a create, change or import here waits for what it returns (this node's instance opened),
   * as EMQ X's create answers once the resource has started on the node handling it.
   */
  changed?: (id: string, resource: Resource | undefined) => Promise<unknown> | undefined
  /** What a type's `probe` is given; absent (unit tests without a node): no probe runs. */
  components?: ResourceComponents
  /** The status of a resource whose type runs instances; undefined for other types (health check). */
  instanceAlive?: (resource: Resource) => Promise<boolean | undefined>
}

/** The resources of one node. */
export class ResourceService {
  private readonly resources = new Map<string, Resource>()
  private readonly unfollow: () => void

  constructor (private readonly init: ResourceServiceInit) {
    for (const [id, resource] of init.table.entries()) this.resources.set(id, resource)
    this.unfollow = init.table.onRemoteChange?.((id) => { this.followRemote(id) }) ?? (() => {})
  }

  /** Stops following other nodes' changes (the engine keeps following while it exists). */
  close (): void {
    this.unfollow()
  }

  /** Every resource (of `type` when given), in id order. */
  list (type?: string): Resource[] {
    const all = [...this.resources.values()].sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
    return type === undefined || type === '' ? all : all.filter(r => r.type === type)
  }

  /** The resource `id`, or undefined. */
  find (id: string): Resource | undefined {
    return this.resources.get(id)
  }

  /** The resource `id`; throws a not-found (404). */
  get (id: string): Resource {
    const resource = this.resources.get(id)
    if (resource === undefined) throw notFound(`resource ${id}`)
    return resource
  }

  /** Checks and stores a new resource. */
  async create (input: ResourceInput): Promise<Resource> {
    return await this.serial(async () => {
      const { def, config, name } = this.checkInput(input)
      const id = name !== undefined ? `${def.name}:${name}` : this.newId()
      if (this.resources.has(id)) throw new RefusedError(`resource ${id} already exists; delete it first or choose another name`)
      await this.probe(def, config)
      const resource: Resource = {
        id,
        ...(name !== undefined ? { name } : {}),
        type: def.name,
        config,
        description: input.description ?? '',
        attrs: 'undefined',
        created_at: Date.now()
      }
      await this.init.table.put(id, resource)
      this.resources.set(id, resource)
      await this.init.changed?.(id, resource)
      return resource
    })
  }

  /**
   * `POST /resources?test=true` (EMQ X 4.4's test_resource, a dry run): what a create checks,
   * the type, the config and whether this node reaches the server (102 naming why not);
   * nothing is stored and nothing opened on any node.
   */
  async test (input: ResourceInput): Promise<void> {
    const { def, config } = this.checkInput(input)
    await this.probe(def, config)
  }

  /** A create's input checked: its type's definition, its config with defaults, its name. */
  private checkInput (input: ResourceInput): { def: ResourceTypeDefinition, config: Record<string, unknown>, name: string | undefined } {
    if (input.type === undefined || input.type === '') throw new MissingParameterError('missing parameter type (a resource type, e.g. web_hook)')
    if (typeof input.type !== 'string') throw new WrongTypeError('parameter type must be a string')
    const def = this.init.registry.findResourceType(input.type)
    if (def === undefined) {
      const known = this.init.registry.resourceTypes().map(t => t.name).join(', ')
      throw new RefusedError(`unknown resource type ${input.type}; known types: ${known}`)
    }
    const name = input.name
    if (name !== undefined && (typeof name !== 'string' || !NAME_PATTERN.test(name))) {
      throw new WrongTypeError(`resource name must be 1 to 128 characters without spaces, '/' or ':', got ${JSON.stringify(name)}`)
    }
    if (input.description !== undefined && typeof input.description !== 'string') throw new WrongTypeError('parameter description must be a string')
    const config = checkParams(def.params, input.config ?? {}, `resource type ${def.name} config`)
    def.checkConfig?.(config)
    return { def, config, name }
  }

  /**
   * Checks a resource of a data import, its id kept, without storing it or probing its server
   * (an imported backend may not be reachable from here yet: its status says so). A secret
   * the export masked (`******`) keeps the value of a stored resource of the same id.
   * Throws as `create` does; the type must be known (the import skips the others).
   */
  checkImported (input: { id: string, type: string, config: Record<string, unknown>, description: string, created_at?: number, name?: string }): Resource {
    const def = this.init.registry.findResourceType(input.type)
    if (def === undefined) throw new RefusedError(`unknown resource type ${input.type}`)
    const before = this.resources.get(input.id)
    const sent = before === undefined ? input.config : restoreParams(input.config, before.config, def.params)
    const config = checkParams(def.params, sent, `resource type ${def.name} config`)
    def.checkConfig?.(config)
    return {
      id: input.id,
      ...(input.name !== undefined ? { name: input.name } : {}),
      type: def.name,
      config,
      description: input.description,
      attrs: 'undefined',
      created_at: input.created_at ?? Date.now()
    }
  }

  /** Stores a resource {@link checkImported} made, replacing one of the same id. */
  async putImported (resource: Resource): Promise<void> {
    await this.serial(async () => {
      await this.init.table.put(resource.id, resource)
      this.resources.set(resource.id, resource)
      await this.init.changed?.(resource.id, resource)
    })
  }

  /**
   * Changes resource `id`'s config and/or description (404 when unknown). The config is
   * checked as at create; a secret sent back as the API showed it (`******`, a URL's
   * `token=******`, a header's `******`) keeps the stored value. A type that runs instances
   * (a bridge) has its instance reopened with the new config (`changed`).
   */
  async update (id: string, patch: ResourcePatch): Promise<Resource> {
    return await this.serial(async () => {
      const stored = this.get(id)
      const def = this.init.registry.findResourceType(stored.type)
      if (def === undefined) throw new RefusedError(`resource ${id} is of type ${stored.type}, unknown on this node; change it on a node that knows the type`)
      if (patch.description !== undefined && typeof patch.description !== 'string') throw new WrongTypeError('parameter description must be a string')
      let config = stored.config
      if (patch.config !== undefined) {
        if (typeof patch.config !== 'object' || patch.config === null || Array.isArray(patch.config)) throw new WrongTypeError('parameter config must be an object')
        config = checkParams(def.params, restoreParams(patch.config, stored.config, def.params), `resource type ${def.name} config`)
        def.checkConfig?.(config)
        await this.probe(def, config)
      }
      const resource: Resource = { ...stored, config, description: patch.description ?? stored.description }
      await this.init.table.put(id, resource)
      this.resources.set(id, resource)
      await this.init.changed?.(id, resource)
      return resource
    })
  }

  /** Deletes resource `id`: 404 when unknown, refused (102) while a rule uses it. */
  async delete (id: string): Promise<void> {
    await this.serial(async () => {
      this.get(id)
      const rules = this.init.usedBy(id)
      if (rules.length > 0) {
        throw new RefusedError(`resource ${id} is used by rule ${rules.map(r => r.id).join(', ')}; delete those rules (or their actions) first`)
      }
      await this.init.table.del(id)
      this.resources.delete(id)
      void this.init.changed?.(id, undefined)
    })
  }

  /**
   * Whether this node can reach the backend of stored resource `id` now (its type's probe):
   * resolves when it can (or the type has no probe), RefusedError (102) naming why otherwise.
   */
  async reachable (id: string): Promise<void> {
    const resource = this.get(id)
    const def = this.init.registry.findResourceType(resource.type)
    if (def === undefined) throw new RefusedError(`resource ${id} is of type ${resource.type}, unknown on this node; load the plugin that provides it`)
    await this.probe(def, resource.config)
  }

  /** Runs the health check of resource `id` now (types without one are always alive). */
  async status (id: string): Promise<ResourceStatus> {
    const resource = this.get(id)
    const running = await this.init.instanceAlive?.(resource)
    if (running !== undefined) return { is_alive: running }
    const check = this.init.registry.findResourceType(resource.type)?.healthCheck
    if (check === undefined) return { is_alive: true }
    return { is_alive: await check(resource, AbortSignal.timeout(HEALTH_CHECK_TIMEOUT_MS)) }
  }

  /**
   * Refuses a config whose backend cannot be reached from this node (the type's `probe`):
   * RefusedError (102) naming the type and why, nothing stored.
   */
  private async probe (def: ResourceTypeDefinition, config: Record<string, unknown>): Promise<void> {
    if (def.probe === undefined || this.init.components === undefined) return
    try {
      await def.probe(config, this.init.components, AbortSignal.timeout(PROBE_TIMEOUT_MS))
    } catch (err) {
      const why = (err as Error)?.message ?? String(err)
      throw new RefusedError(`resource type ${def.name}: cannot connect: ${why}; start the server or correct the config`)
    }
  }

  private async serial<T> (fn: () => Promise<T>): Promise<T> {
    return await this.init.queue.run(fn)
  }

  /**
   * Brings resource `id` in line with the table after another node changed it. Queued
   * behind local writes and read from the table, so what stays is whichever write won. A
   * delete wins even while local rules use the resource (their actions fail until it is
   * back); that is logged, as is a value that is not a resource (left out).
   */
  private followRemote (id: string): void {
    const logger = this.init.logger
    this.serial(async () => {
      const resource = this.init.table.get(id)
      const known = this.resources.has(id)
      if (resource === undefined) {
        if (!known) return
        this.resources.delete(id)
        void this.init.changed?.(id, undefined)
        const rules = this.init.usedBy(id).map(r => r.id)
        if (rules.length > 0) logger?.warn({ resource_id: id, rules }, 'resource deleted on another node while rules here use it; their actions fail until it exists again')
        else logger?.info({ resource_id: id }, 'resource deleted on another node')
      } else if (!isStoredResource(id, resource)) {
        this.resources.delete(id)
        void this.init.changed?.(id, undefined)
        logger?.error({ resource_id: id }, 'a resource from another node is not a valid resource; it is not loaded')
      } else {
        this.resources.set(id, resource)
        void this.init.changed?.(id, resource)
        if (this.init.registry.findResourceType(resource.type) === undefined) {
          logger?.warn({ resource_id: id, type: resource.type }, 'a resource from another node is of a type unknown here; actions bound to it cannot run on this node')
        } else {
          logger?.info({ resource_id: id }, known ? 'resource updated on another node' : 'resource created on another node')
        }
      }
    }).catch((err) => logger?.error({ resource_id: id, err }, 'could not apply a resource change from another node'))
  }

  private newId (): string {
    let id: string
    do id = `resource:${randomBytes(4).toString('hex')}`; while (this.resources.has(id))
    return id
  }
}

/** Whether `value`, stored at `id`, has the shape of a {@link Resource} (another node wrote it). */
function isStoredResource (id: string, value: unknown): value is Resource {
  const r = value as Partial<Resource> | null
  return typeof r === 'object' && r !== null && r.id === id && typeof r.type === 'string' &&
    typeof r.config === 'object' && r.config !== null && !Array.isArray(r.config) &&
    typeof r.description === 'string' && typeof r.created_at === 'number' && (r.name === undefined || typeof r.name === 'string')
}
