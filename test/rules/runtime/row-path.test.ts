/**
 * The rule runtime's row path (ActionDefinition.rowWriter, rules/runtime.ts): a run handed to
 * its resource instance's writer with the action's shared outcome, instead of `run`. Which
 * runs take it (only those nothing waits on), what they count (success and failed exactly,
 * whenever and however the writer settles them), and when `run` is used instead (the
 * instance not opened yet, a writer refused, fallbacks, a held publish, `stop`).
 */
import { messageEvent } from '../../../node/mqtt/broker-events.js'
import type { PublishHold } from '../../../node/mqtt/publish-hold.js'
import { createBuiltInRegistry } from '../../../rules/engine.js'
import { EngineMetrics } from '../../../rules/metrics.js'
import { RepublishMarks } from '../../../rules/republish-marks.js'
import { RuleRuntime } from '../../../rules/runtime.js'
import { compileSql } from '../../../rules/sql/index.js'
import type { ActionDefinition, OnActionFailed, ResourceInstance, RowSettle, RuleAction } from '../../../rules/types.js'
import { standInNode } from './stand-in-node.js'

/** A resource instance whose writer keeps what it was given. */
class Instance implements ResourceInstance {
  readonly rows: Array<{ selected: Record<string, unknown>, settle: RowSettle, action: string }> = []
  alive (): boolean { return true }
  async close (): Promise<void> {}
}

interface World {
  instance: Instance | undefined
  /** Whether the writer is refused for an instance (rowWriter gives undefined). */
  refuse: boolean
  writersMade: number
  runs: string[]
}

function rowAction (world: World, name: string, extra: Partial<ActionDefinition> = {}): ActionDefinition {
  return {
    name,
    aliases: [],
    app: 'test',
    for: '$any',
    types: [],
    title: name,
    description: name,
    params: {},
    run: async (_s, ctx) => {
      world.runs.push(ctx.actionId)
      if (ctx.params.fail === true) throw new Error('run failed')
    },
    rowWriter: (params, instance, actionId) => {
      world.writersMade++
      if (world.refuse || !(instance instanceof Instance)) return undefined
      return (selected, settle) => {
        if (params.throws === true) throw new Error('no row of that')
        instance.rows.push({ selected, settle, action: actionId })
      }
    },
    ...extra
  }
}

const act = (id: string, name: string, params: Record<string, unknown> = {}, fallbacks?: RuleAction[]): RuleAction =>
  ({ id, name, params: { $resource: 'res:1', ...params }, ...(fallbacks !== undefined ? { fallbacks } : {}) })

function start (world: World, actions: RuleAction[], onFailed?: OnActionFailed, qos: 0 | 1 = 0): { metrics: EngineMetrics, publish: (n?: number) => void, settle: () => Promise<void>, holds: PublishHold[] } {
  const { logger, hooks, holds, node } = standInNode()
  const registry = createBuiltInRegistry()
  registry.registerAction(rowAction(world, 'rows'))
  registry.registerAction(rowAction(world, 'rows-holding', { holdsPublish: () => true }))
  const metrics = new EngineMetrics()
  const runtime = new RuleRuntime({
    node,
    logger,
    registry,
    metrics,
    marks: new RepublishMarks(),
    resource: () => undefined,
    instance: async () => world.instance,
    running: () => world.instance
  })
  const sql = 'SELECT payload.n as n FROM "t/#"'
  runtime.load([{ rule: { id: 'r:1', for: 'message.publish', rawsql: sql, actions, on_action_failed: onFailed, enabled: true, description: '', created_at: 0 }, compiled: compileSql(sql) }])
  runtime.start()
  let seq = 0
  return {
    metrics,
    publish: (n = 1) => {
      for (let i = 0; i < n; i++) hooks.emit('message.publish', messageEvent('message.publish', 'n1@127.0.0.1', { topic: 't/1', payload: Buffer.from(JSON.stringify({ n: seq++ })), qos }, null))
    },
    settle: async () => { for (let i = 0; i < 5; i++) await new Promise(resolve => setImmediate(resolve)) },
    holds
  }
}

const counters = (m: EngineMetrics, id: string): [number, number, number] => {
  const c = m.findAction(id)
  return [c?.taken ?? 0, c?.success ?? 0, c?.failed ?? 0]
}

const newWorld = (): World => ({ instance: new Instance(), refuse: false, writersMade: 0, runs: [] })

describe('the row path', () => {
  it('hands each run to the writer, in order, and counts exactly what the writer settles, when it settles', async () => {
    const world = newWorld()
    const h = start(world, [act('a', 'rows'), act('b', 'rows')])
    h.publish(5)
    await h.settle()
    const rows = world.instance!.rows
    expect(rows.map((r) => `${r.action}:${String(r.selected.n)}`)).toEqual(['a:0', 'b:0', 'a:1', 'b:1', 'a:2', 'b:2', 'a:3', 'b:3', 'a:4', 'b:4'])
    expect(world.runs).toEqual([])
    // one writer per action and instance, not per run
    expect(world.writersMade).toBe(2)
    expect(counters(h.metrics, 'a')).toEqual([5, 0, 0])
    for (const [i, r] of rows.entries()) {
      if (r.action !== 'a') continue
      if (i % 4 === 0) r.settle.reject(new Error('refused'))
      else r.settle.resolve()
    }
    // the action's settle is shared by its runs: nothing per run to keep
    expect(rows[0].settle).toBe(rows[2].settle)
    expect(counters(h.metrics, 'a')).toEqual([5, 2, 3])
    expect(counters(h.metrics, 'b')).toEqual([5, 0, 0])
  })

  it('counts a writer that throws as a failed run', async () => {
    const world = newWorld()
    const h = start(world, [act('a', 'rows', { throws: true })])
    h.publish(3)
    await h.settle()
    expect(counters(h.metrics, 'a')).toEqual([3, 0, 3])
    expect(world.runs).toEqual([])
  })

  it('runs `run` while the instance is not opened, or when its writer is refused, and asks again for a new instance', async () => {
    const world = newWorld()
    const opened = world.instance
    world.instance = undefined
    const h = start(world, [act('a', 'rows')])
    h.publish(2)
    await h.settle()
    expect(world.runs).toEqual(['a', 'a'])
    expect(world.writersMade).toBe(0)
    world.instance = opened
    h.publish()
    await h.settle()
    expect(opened!.rows).toHaveLength(1)
    // a new instance (the resource restarted) whose writer is refused: `run`, and the writer asked once
    world.instance = new Instance()
    world.refuse = true
    h.publish(2)
    await h.settle()
    expect(world.runs).toEqual(['a', 'a', 'a', 'a'])
    expect(world.writersMade).toBe(2)
    expect(counters(h.metrics, 'a')).toEqual([5, 4, 0])
  })

  it('runs `run` for an action with fallbacks, one that holds the publish, and under on_action_failed stop', async () => {
    const world = newWorld()
    const h = start(world, [act('a', 'rows', { fail: true }, [act('a.f', 'rows')]), act('b', 'rows-holding')], 'continue', 1)
    h.publish()
    await h.settle()
    // a failed through run(): its fallback ran, itself on the row path (nothing waits on a fallback)
    expect(world.runs).toEqual(['a', 'b'])
    expect(world.instance!.rows.map((r) => r.action)).toEqual(['a.f'])
    expect(counters(h.metrics, 'a')).toEqual([1, 0, 1])
    expect(counters(h.metrics, 'b')).toEqual([1, 1, 0])
    expect(h.holds).toHaveLength(1)

    const stop = newWorld()
    const s = start(stop, [act('a', 'rows'), act('b', 'rows')], 'stop')
    s.publish()
    await s.settle()
    expect(stop.runs).toEqual(['a', 'b'])
    expect(stop.instance!.rows).toEqual([])
  })
})
