/**
 * The running parts of resources on one node (docs/rules.md, Resources): a resource whose
 * type has `open` (bridge_mqtt, bridge_rpc) runs something here (a connection, a buffer)
 * while the rule engine runs. Other types are configuration only and have none.
 *
 * Invariants:
 * - While started, exactly the known resources of such types have an instance (or one being
 *   opened); stopped, none. A resource created, changed or deleted (here or on another node)
 *   is followed through {@link ResourceInstances.sync}.
 * - Opens and closes of one resource id run one after another, in call order (a delete
 *   during an open closes what the open made), so two instances of one resource never run
 *   together and share its disk buffer.
 * - `stop` resolves once every open and close it knows of has finished, released ones too.
 * - An open that fails is logged; the resource then has no instance (status not alive, its
 *   actions fail) until it is changed or the engine starts again.
 */
import type { Logger } from '../node/logger.js'
import type { ActionRegistry } from './registry.js'
import type { Resource, ResourceComponents, ResourceInstance } from './types.js'

interface Slot {
  resource: Resource
  /** The instance once opened (undefined: the open failed or the type has none). */
  instance: Promise<ResourceInstance | undefined>
  /** The same, once it has opened (set before {@link instance} resolves). */
  opened?: ResourceInstance
}

/** What {@link ResourceInstances} needs. */
export interface ResourceInstancesInit {
  registry: ActionRegistry
  /** What a type's `open` is given; absent (unit tests without a node): nothing is opened. */
  components: ResourceComponents | undefined
  logger: Logger
}

/** The resource instances of one node's rule engine. */
export class ResourceInstances {
  private readonly slots = new Map<string, Slot>()
  /** The last open or close of each id, so the next one waits for it. */
  private readonly tails = new Map<string, Promise<unknown>>()
  private running = false

  constructor (private readonly init: ResourceInstancesInit) {}

  /** Opens an instance for each of `resources` whose type runs one. */
  start (resources: readonly Resource[]): void {
    this.running = true
    for (const r of resources) this.sync(r.id, r)
  }

  /** Closes every instance (their disk buffers stay); resolves when all are closed. */
  async stop (): Promise<void> {
    this.running = false
    await Promise.all([...this.slots.keys()].map(async (id) => await this.closeSlot(id, false)))
    // and the closes already under way: a plugin that unloaded first released its resources
    // without waiting (release), and a node restarted in the same process opened a disk
    // buffer while the old instance was still closing it (found by test/e2e/data-pgsql.test.ts)
    await Promise.all([...this.tails.values()])
  }

  /**
   * Brings resource `id`'s instance in line with `resource` (undefined: deleted). A changed
   * config closes the old instance and opens a new one.
   */
  sync (id: string, resource: Resource | undefined): void {
    const slot = this.slots.get(id)
    if (slot !== undefined && resource !== undefined && sameResource(slot.resource, resource)) return
    if (slot !== undefined) void this.closeSlot(id, resource === undefined)
    if (resource === undefined || !this.running) return
    const open = this.init.registry.findResourceType(resource.type)?.open
    const components = this.init.components
    if (open === undefined || components === undefined) return
    const next: Slot = { resource, instance: Promise.resolve(undefined) }
    next.instance = this.chain(id, async () => {
      try {
        const made = await open(resource, components)
        this.init.logger.info({ resource_id: id, type: resource.type }, 'resource started on this node')
        // only while the slot is current: a delete or change during the open closes what it made
        if (this.slots.get(id) === next) next.opened = made
        return made
      } catch (err) {
        this.init.logger.error({ resource_id: id, type: resource.type, err: (err as Error)?.message ?? String(err) }, 'resource could not start on this node; its actions fail until it is changed or the rule engine restarts')
        return undefined
      }
    })
    this.slots.set(id, next)
  }

  /**
   * Closes resource `resource`'s instance (keeping its disk buffer) and opens a new one with
   * the same config (`POST /resources/:id`: reconnect now); resolves once the new one has
   * opened (or failed to). Nothing happens for a type without instances or while stopped.
   */
  async restart (resource: Resource): Promise<void> {
    if (this.slots.has(resource.id)) void this.closeSlot(resource.id, false)
    this.sync(resource.id, resource)
    await this.get(resource.id)
  }

  /**
   * Closes resource `id`'s instance and keeps its data (its disk buffer): the plugin that
   * provides its type unloads. {@link ResourceInstances.sync} opens it again once the type is back.
   */
  release (id: string): void {
    void this.closeSlot(id, false)
  }

  /** The instance of resource `id` (waiting while it opens), or undefined. */
  async get (id: string): Promise<ResourceInstance | undefined> {
    return await this.slots.get(id)?.instance
  }

  /**
   * The instance of resource `id` if it has opened, without waiting (the rule runtime's row
   * path, rules/runtime.ts); undefined while it opens, after it failed, or once closing.
   */
  opened (id: string): ResourceInstance | undefined {
    return this.slots.get(id)?.opened
  }

  /** Whether resource `id` has an instance here that says it works; undefined for a type without instances. */
  async alive (resource: Resource): Promise<boolean | undefined> {
    if (this.init.registry.findResourceType(resource.type)?.open === undefined) return undefined
    const instance = await this.get(resource.id)
    if (instance === undefined) return false
    try {
      return await instance.alive()
    } catch {
      return false
    }
  }

  private async closeSlot (id: string, removed: boolean): Promise<void> {
    const slot = this.slots.get(id)
    if (slot === undefined) return
    this.slots.delete(id)
    await this.chain(id, async () => {
      const instance = await slot.instance
      if (instance === undefined) return
      try {
        await instance.close(removed)
        this.init.logger.info({ resource_id: id, removed }, 'resource stopped on this node')
      } catch (err) {
        this.init.logger.error({ resource_id: id, err: (err as Error)?.message ?? String(err) }, 'resource did not stop cleanly')
      }
    })
  }

  /** Runs `fn` after the previous open or close of `id`. */
  private async chain<T> (id: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(id) ?? Promise.resolve()
    const next = previous.then(fn, fn)
    const tail = next.catch(() => {})
    this.tails.set(id, tail)
    void tail.then(() => { if (this.tails.get(id) === tail) this.tails.delete(id) })
    return await next
  }
}

function sameResource (a: Resource, b: Resource): boolean {
  return a.type === b.type && a.created_at === b.created_at && JSON.stringify(a.config) === JSON.stringify(b.config)
}
