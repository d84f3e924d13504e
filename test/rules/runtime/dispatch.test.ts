/**
 * Which rules run on an event, in which order, and what a failing one counts: the runtime on a
 * hooks bus, with an MQTT core stand-in that emits `message.publish` for what a rule republishes
 * (as the broker does).
 */
import { pino } from 'pino'
import { HooksBus, type ConnectedEvent } from '../../../node/hooks.js'
import { messageEvent } from '../../../node/mqtt/broker-events.js'
import type { StarlingNode } from '../../../node/node.js'
import { createBuiltInRegistry } from '../../../rules/engine.js'
import { EngineMetrics } from '../../../rules/metrics.js'
import { checkParams } from '../../../rules/params.js'
import { RepublishMarks } from '../../../rules/republish-marks.js'
import type { RuleEntry } from '../../../rules/rule-service.js'
import { RuleRuntime } from '../../../rules/runtime.js'
import { compileSql } from '../../../rules/sql/index.js'

interface Harness {
  metrics: EngineMetrics
  hooks: HooksBus
  /** Topics the rules republished to, in order. */
  republished: string[]
  publish: (topic: string, payload: string) => void
  /** Lets the queued actions (and what they publish) run. */
  settle: () => Promise<void>
  /** Replaces the rules (as after a change through the API). */
  load: (rules: RuleSpec[]) => void
  stop: () => void
}

/** A rule of {@link start}: id, SQL, action and its params. */
type RuleSpec = [id: string, sql: string, action: string, params?: Record<string, unknown>]

/** A started runtime with `rules` (id → [sql, action, params]); ids sort as given. */
function start (rules: RuleSpec[]): Harness {
  const logger = pino({ level: 'silent' })
  const hooks = new HooksBus(logger)
  const republished: string[] = []
  const publish = (packet: { topic: string, payload: Buffer, qos: number }): void => {
    if (hooks.has('message.publish')) hooks.emit('message.publish', messageEvent('message.publish', 'n1@127.0.0.1', packet, null))
  }
  const core = {
    publish: async (packet: { topic: string, payload: Buffer, qos: number }): Promise<void> => {
      republished.push(packet.topic)
      publish(packet)
    }
  }
  const node = { name: 'n1@127.0.0.1', logger, hooks, broker: { core } } as unknown as StarlingNode
  const registry = createBuiltInRegistry()
  const metrics = new EngineMetrics()
  const runtime = new RuleRuntime({ node, logger, registry, metrics, marks: new RepublishMarks(), resource: () => undefined })
  const entries = (specs: RuleSpec[]): RuleEntry[] => specs.map(([id, sql, action, params]) => {
    const compiled = compileSql(sql)
    const checked = checkParams(registry.findAction(action)!.params, params ?? {}, action)
    return { rule: { id, for: compiled.events.join(','), rawsql: sql, actions: [{ id: `${action}_${id}`, name: action, params: checked }], enabled: true, description: '', created_at: 0 }, compiled }
  })
  runtime.load(entries(rules))
  runtime.start()
  return {
    metrics,
    hooks,
    republished,
    publish: (topic, payload) => publish({ topic, payload: Buffer.from(payload), qos: 0 }),
    settle: async () => {
      for (let i = 0; i < 5; i++) await new Promise(resolve => setImmediate(resolve))
    },
    load: (specs) => runtime.load(entries(specs)),
    stop: () => runtime.stop()
  }
}

const counts = (h: Harness, id: string): { matched: number, failed: number } => {
  const c = h.metrics.findRule(id)
  return { matched: c?.matched ?? 0, failed: c?.failed ?? 0 }
}

describe('rule runtime dispatch', () => {
  it('finds a topic\'s rules again after the rules change, and past the topics it remembers', () => {
    const h = start([['a:1', 'SELECT topic FROM "m/#"', 'do_nothing']])
    h.publish('m/1', '{}')
    h.publish('n/1', '{}')
    expect([counts(h, 'a:1').matched, counts(h, 'b:1').matched]).toEqual([1, 0])
    // n/1 was looked up (no rule) before b:1 existed: the change starts the memo again
    h.load([['a:1', 'SELECT topic FROM "m/#"', 'do_nothing'], ['b:1', 'SELECT topic FROM "n/+", "m/1"', 'do_nothing']])
    h.publish('n/1', '{}')
    h.publish('m/1', '{}')
    expect([counts(h, 'a:1').matched, counts(h, 'b:1').matched]).toEqual([2, 2])
    // more topics than the memo holds (4096), then the first ones again
    for (let i = 0; i < 5000; i++) h.publish(`m/${i}`, '{}')
    for (let i = 0; i < 3; i++) h.publish(`m/${i}`, '{}')
    expect([counts(h, 'a:1').matched, counts(h, 'b:1').matched]).toEqual([5005, 4])
    h.load([])
    h.publish('m/1', '{}')
    expect(counts(h, 'a:1').matched).toBe(5005)
    h.stop()
  })

  it('runs an EMQ X 4 rule only on topics its FROM filters match, once when several match', async () => {
    const h = start([
      ['a:1', 'SELECT topic FROM "t/#", "t/+", "t/1"', 'do_nothing'],
      ['b:1', 'SELECT topic FROM "x/#"', 'do_nothing'],
      ['c:1', 'SELECT topic FROM "t/#", "t/#"', 'do_nothing']
    ])
    h.publish('t/1', '{}')
    expect([counts(h, 'a:1').matched, counts(h, 'b:1').matched, counts(h, 'c:1').matched]).toEqual([1, 0, 1])
    h.publish('x/1/2', '{}')
    h.publish('y', '{}')
    h.publish('$SYS/brokers', '{}')
    expect([counts(h, 'a:1').matched, counts(h, 'b:1').matched, counts(h, 'c:1').matched]).toEqual([1, 1, 1])
    h.stop()
  })

  it('runs the rules of a publish in rule-id order, whatever their dialect and filters', async () => {
    const republish = (id: string): Record<string, unknown> => ({ target_topic: `out/${id}`, target_qos: 0 })
    const h = start([
      ['r1:1', 'SELECT * FROM "t/#" WHERE topic = \'t/1\'', 'republish', republish('r1')],
      ['r2:1', 'SELECT * FROM "message.publish" WHERE topic = \'t/1\'', 'republish', republish('r2')],
      ['r3:1', 'SELECT * FROM "t/1" WHERE topic = \'t/1\'', 'republish', republish('r3')],
      ['r4:1', 'SELECT * FROM "#" WHERE topic = \'t/1\'', 'republish', republish('r4')],
      ['r5:1', 'SELECT * FROM "t/+", "t/#" WHERE topic = \'t/1\'', 'republish', republish('r5')],
      ['r6:1', 'SELECT * FROM "message.publish" WHERE topic = \'t/1\'', 'republish', republish('r6')]
    ])
    h.publish('t/1', '{}')
    await h.settle()
    expect(h.republished).toEqual(['out/r1', 'out/r2', 'out/r3', 'out/r4', 'out/r5', 'out/r6'])
    h.stop()
  })

  it('counts a rule reading a payload that is not JSON as failed, and still runs the others', async () => {
    const h = start([
      ['json:1', 'SELECT payload.temp AS t FROM "t/#" WHERE payload.temp > 30', 'do_nothing'],
      ['json:2', 'SELECT qos FROM "message.publish" WHERE payload.temp > 30', 'do_nothing'],
      ['plain:1', 'SELECT payload FROM "t/#"', 'do_nothing'],
      ['topic:1', 'SELECT qos FROM "message.publish" WHERE topic = \'t/1\' and payload.temp > 30', 'do_nothing']
    ])
    h.publish('t/1', 'temp=31')
    h.publish('t/2', '')
    h.publish('t/1', '{"temp":31}')
    expect([counts(h, 'json:1'), counts(h, 'json:2'), counts(h, 'plain:1'), counts(h, 'topic:1')]).toEqual([
      { matched: 1, failed: 2 },
      { matched: 1, failed: 2 },
      { matched: 3, failed: 0 },
      // on t/2 the WHERE stops at the topic, before the payload
      { matched: 1, failed: 1 }
    ])
    h.stop()
  })

  it('does not run a rule on its own republished message; the other rules see it', async () => {
    const h = start([
      ['loop:1', 'SELECT * FROM "t/#"', 'republish', { target_topic: 't/copy', target_qos: 0, payload_tmpl: '' }],
      ['reads:1', 'SELECT payload.topic AS was FROM "t/#" WHERE payload.topic = \'t/1\'', 'do_nothing']
    ])
    h.publish('t/1', '{}')
    await h.settle()
    expect(h.republished).toEqual(['t/copy'])
    // reads:1 matches the copy only: its payload is the selected columns as JSON, with the original's topic
    expect([counts(h, 'loop:1'), counts(h, 'reads:1')]).toEqual([{ matched: 1, failed: 0 }, { matched: 1, failed: 0 }])
    h.stop()
  })

  it('runs every rule of a client event, in either dialect', () => {
    const h = start([
      ['e4:1', 'SELECT clientid FROM "$events/client_connected"', 'do_nothing'],
      ['spec:1', 'SELECT client_id FROM "client.connected" WHERE client_id = \'c1\'', 'do_nothing']
    ])
    const event = {
      event: 'client.connected', client_id: 'c1', username: undefined, timestamp: 1, node: 'n1@127.0.0.1', peername: '127.0.0.1:5000',
      peerhost: '127.0.0.1', sockname: '127.0.0.1:1883', mountpoint: undefined, auth_result: 'success', proto_ver: 4, proto_name: 'MQTT',
      clean_start: true, connack: 0, connected_at: 1, is_bridge: false, keepalive: 60, expiry_interval: 0, conn_props: {}
    } satisfies ConnectedEvent
    h.hooks.emit('client.connected', event)
    expect([counts(h, 'e4:1').matched, counts(h, 'spec:1').matched]).toEqual([1, 1])
    h.stop()
  })
})
