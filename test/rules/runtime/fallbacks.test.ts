/**
 * EMQ X 4.4's `fallbacks` and `on_action_failed` in the rule runtime: which actions run after
 * one fails, in which order, and what each counts, with actions that fail at once (a throw),
 * later (a rejection) or succeed, on a hooks bus.
 */
import { messageEvent } from '../../../node/mqtt/broker-events.js'
import { createBuiltInRegistry } from '../../../rules/engine.js'
import { EngineMetrics } from '../../../rules/metrics.js'
import { RepublishMarks } from '../../../rules/republish-marks.js'
import { everyAction } from '../../../rules/rule-service.js'
import { RuleRuntime } from '../../../rules/runtime.js'
import type { PublishHold } from '../../../node/mqtt/publish-hold.js'
import { compileSql } from '../../../rules/sql/index.js'
import type { ActionDefinition, OnActionFailed, RuleAction } from '../../../rules/types.js'
import { standInNode } from './stand-in-node.js'

/** What ran, in order: each action instance's id as it started. */
let ran: string[] = []
/** Rejections not yet settled: settled by the test to order what follows. */
const later: Array<() => void> = []

function testAction (name: string, run: ActionDefinition['run']): ActionDefinition {
  return { name, aliases: [], app: 'test', for: '$any', types: [], title: name, description: name, params: {}, run }
}

const ACTIONS = [
  testAction('ok', (_s, ctx) => { ran.push(ctx.actionId) }),
  // as a data action with its local buffer: its run holds the QoS 1/2 publisher's PUBACK
  { ...testAction('holds-throws', (_s, ctx) => { ran.push(ctx.actionId); throw new Error('no') }), holdsPublish: () => true },
  { ...testAction('holds-ok', (_s, ctx) => { ran.push(ctx.actionId) }), holdsPublish: () => true },
  testAction('throws', (_s, ctx) => { ran.push(ctx.actionId); throw new Error('no') }),
  testAction('rejects', async (_s, ctx) => {
    ran.push(ctx.actionId)
    await new Promise<void>((_resolve, reject) => later.push(() => reject(new Error('not now'))))
  })
]

const act = (id: string, name: string, fallbacks?: RuleAction[]): RuleAction => ({ id, name, params: {}, ...(fallbacks !== undefined ? { fallbacks } : {}) })

/** A started runtime with one rule on `t/#`; publish() sends one message. */
function start (actions: RuleAction[], onFailed?: OnActionFailed, qos: 0 | 1 = 0): { metrics: EngineMetrics, publish: () => void, settle: () => Promise<void>, holds: PublishHold[] } {
  const { logger, hooks, holds, node } = standInNode()
  const registry = createBuiltInRegistry()
  for (const a of ACTIONS) registry.registerAction(a)
  const metrics = new EngineMetrics()
  const runtime = new RuleRuntime({ node, logger, registry, metrics, marks: new RepublishMarks(), resource: () => undefined })
  const compiled = compileSql('SELECT * FROM "t/#"')
  runtime.load([{ rule: { id: 'r:1', for: 'message.publish', rawsql: 'SELECT * FROM "t/#"', actions, on_action_failed: onFailed, enabled: true, description: '', created_at: 0 }, compiled }])
  runtime.start()
  return {
    metrics,
    publish: () => hooks.emit('message.publish', messageEvent('message.publish', 'n1@127.0.0.1', { topic: 't/1', payload: Buffer.from('{}'), qos }, null)),
    settle: async () => { for (let i = 0; i < 5; i++) await new Promise(resolve => setImmediate(resolve)) },
    holds
  }
}

const counters = (m: EngineMetrics, id: string): [number, number, number] => {
  const c = m.findAction(id)
  return [c?.taken ?? 0, c?.success ?? 0, c?.failed ?? 0]
}

beforeEach(() => { ran = []; later.length = 0 })

describe('fallbacks and on_action_failed', () => {
  it('runs the fallbacks of a failed action (theirs too when they fail), never those of one that succeeded', async () => {
    const h = start([
      act('a', 'throws', [act('a.f0', 'throws', [act('a.f0.f0', 'ok')]), act('a.f1', 'ok')]),
      act('b', 'ok', [act('b.f0', 'ok')])
    ])
    h.publish()
    await h.settle()
    expect(ran).toEqual(['a', 'a.f0', 'a.f0.f0', 'a.f1', 'b'])
    expect(counters(h.metrics, 'a')).toEqual([1, 0, 1])
    expect(counters(h.metrics, 'a.f0')).toEqual([1, 0, 1])
    expect(counters(h.metrics, 'a.f0.f0')).toEqual([1, 1, 0])
    expect(counters(h.metrics, 'b.f0')).toEqual([0, 0, 0])
  })

  it('continue (the default): the actions start together; a later failure runs its fallbacks then', async () => {
    const h = start([act('a', 'rejects', [act('a.f0', 'ok')]), act('b', 'ok')])
    h.publish()
    await h.settle()
    expect(ran).toEqual(['a', 'b'])
    later.shift()!()
    await h.settle()
    expect(ran).toEqual(['a', 'b', 'a.f0'])
    expect(counters(h.metrics, 'a')).toEqual([1, 0, 1])
  })

  it('stop: each action waits for the one before it, and none runs after one that failed (its fallbacks do)', async () => {
    const h = start([act('a', 'ok'), act('b', 'rejects', [act('b.f0', 'ok')]), act('c', 'ok')], 'stop')
    h.publish()
    await h.settle()
    expect(ran).toEqual(['a', 'b'])
    later.shift()!()
    await h.settle()
    expect(ran).toEqual(['a', 'b', 'b.f0'])
    expect(counters(h.metrics, 'c')).toEqual([0, 0, 0])

    // a thrown failure stops at once; an event whose actions all succeed runs them all, in order
    const s = start([act('x', 'throws'), act('y', 'ok')], 'stop')
    s.publish()
    await s.settle()
    expect(ran.slice(3)).toEqual(['x'])
    const all = start([act('p', 'ok'), act('q', 'ok')], 'stop')
    all.publish()
    await all.settle()
    expect(ran.slice(4)).toEqual(['p', 'q'])
  })

  it('everyAction lists a rule\'s actions and their fallbacks, depth first', () => {
    expect(everyAction([act('a', 'ok', [act('a.f0', 'ok', [act('a.f0.f0', 'ok')])]), act('b', 'ok')]).map(a => a.id)).toEqual(['a', 'a.f0', 'a.f0.f0', 'b'])
  })

  it('stop: the publish held for the actions that will not run after a failure is released with the failure', async () => {
    const h = start([act('a', 'holds-throws'), act('b', 'holds-ok'), act('c', 'holds-ok')], 'stop', 1)
    h.publish()
    await h.settle()
    expect(ran).toEqual(['a'])
    expect(h.holds).toHaveLength(1)
    let completed = false
    h.holds[0].wait(() => { completed = true })
    expect(completed).toBe(true)
  })

  it('continue: the publish completes once every holding action settled, fallbacks holding nothing', async () => {
    const h = start([act('a', 'holds-throws', [act('a.f0', 'holds-ok')]), act('b', 'holds-ok')], 'continue', 1)
    h.publish()
    await h.settle()
    expect(ran).toEqual(['a', 'a.f0', 'b'])
    let completed = false
    h.holds[0].wait(() => { completed = true })
    expect(completed).toBe(true)
  })
})
