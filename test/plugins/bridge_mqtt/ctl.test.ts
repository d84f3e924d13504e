/**
 * The bridges' control surfaces without a plugin: the `bridges` renderers (EMQ X 4.4's texts),
 * the input checks (115, 116, 107), the node-side handlers and the `$SYS`/metrics sampler,
 * over a NodeRpc whose `bridges.*` operations are a stand-in for svc_bridge_mqtt's.
 */
import { jest } from '@jest/globals'
import { NodeRpc } from '../../../node/rpc.js'
import { silentLogger } from '../../../node/logger.js'
import { createMetrics } from '../../../node/metrics.js'
import {
  BRIDGE_CTL_COMMANDS, bridgeHandlers, renderBridgeList, renderForwards, renderSubscriptions, statusWord,
  bridgesStartCommand, bridgesStopCommand, bridgesAddSubscriptionCommand
} from '../../../plugins/bridge_mqtt/ctl.js'
import {
  BRIDGE_OPS, checkForwardTopic, checkQos, checkSubscriptionTopic, clusterBridges, nodeBridge, nodeBridges
} from '../../../plugins/bridge_mqtt/ops-client.js'
import { bridgeSysMessages, createBridgesSys } from '../../../plugins/bridge_mqtt/sys.js'
import type { BridgeInfo } from '../../../plugins/bridge_mqtt/types.js'
import { bridgeInfo, registerBridgesStandIn } from '../../helpers/bridges-stand-in.js'

const CONFIG = { 'mqtt.max_topic_levels': 0 }

const info = bridgeInfo

/** svc_bridge_mqtt's operations over plain objects: what the plugin answers, without a remote. */
function fakePlugin (rpc: NodeRpc, bridges: BridgeInfo[]): void {
  registerBridgesStandIn(rpc, bridges, 'connecting')
}

const invoke = { args: [], options: {} }

describe('bridges renderers (EMQ X 4.4 emqx_bridge_mqtt_cli texts)', () => {
  it('lists name and status, Running for connected, Stopped for stopped, Connecting in between', () => {
    expect(renderBridgeList([info('aws', { status: 'connected' }), info('local'), info('site', { status: 'connecting' })]))
      .toBe('name: aws     status: Running\nname: local     status: Stopped\nname: site     status: Connecting\n')
    expect(statusWord('connected')).toBe('Running')
    expect(renderBridgeList([])).toBe('')
  })

  it('prints forwards and subscriptions one per line', () => {
    expect(renderForwards(['topic1/#', 'topic2/#'])).toBe('topic:   topic1/#\ntopic:   topic2/#\n')
    expect(renderSubscriptions([{ topic: 'cmd/#', qos: 1 }])).toBe('topic: cmd/#, qos: 1\n')
  })

  it('prints EMQ X\'s answers of the changing commands', () => {
    expect(bridgesStartCommand.render(true, invoke)).toBe('Start bridge successfully.\n')
    expect(bridgesStartCommand.render(false, invoke)).toBe('Bridge already started.\n')
    expect(bridgesStopCommand.render(true, invoke)).toBe('Stop bridge successfully.\n')
    expect(bridgesAddSubscriptionCommand.render(null, invoke)).toBe('Add-subscription topic successfully.\n')
    const byWords = Object.fromEntries(BRIDGE_CTL_COMMANDS.map(c => [c.words.join(' '), c]))
    expect(byWords['bridges add-forward'].render(null, invoke)).toBe('Add-forward topic successfully.\n')
    expect(byWords['bridges del-forward'].render(null, invoke)).toBe('Del-forward topic successfully.\n')
    expect(byWords['bridges del-subscription'].render(null, invoke)).toBe('Del-subscription topic successfully.\n')
  })

  it('has the spec\'s nine commands with their arguments', () => {
    expect(BRIDGE_CTL_COMMANDS.map(c => [...c.words, ...(c.args ?? []).map(a => `<${a.name}>`)].join(' '))).toEqual([
      'bridges list', 'bridges start <Name>', 'bridges stop <Name>', 'bridges forwards <Name>',
      'bridges add-forward <Name> <Topic>', 'bridges del-forward <Name> <Topic>', 'bridges subscriptions <Name>',
      'bridges add-subscription <Name> <Topic> <Qos>', 'bridges del-subscription <Name> <Topic>'
    ])
  })
})

describe('bridge input checks', () => {
  it('accepts topic filters and refuses others with 115', () => {
    expect(checkForwardTopic(CONFIG, 'a/+/#')).toBe('a/+/#')
    expect(checkSubscriptionTopic(CONFIG, '$share/g/cmd/#')).toBe('$share/g/cmd/#')
    for (const bad of ['a/#/b', 'a+', 'x\u0000']) {
      expect(() => checkForwardTopic(CONFIG, bad)).toThrow(expect.objectContaining({ code: 115 }))
      expect(() => checkSubscriptionTopic(CONFIG, bad)).toThrow(expect.objectContaining({ code: 115 }))
    }
    expect(() => checkForwardTopic(CONFIG, '$share/g/a')).toThrow(expect.objectContaining({ code: 115, message: expect.stringContaining('shared') }))
    expect(() => checkForwardTopic({ 'mqtt.max_topic_levels': 2 }, 'a/b/c')).toThrow(expect.objectContaining({ code: 115 }))
    expect(() => checkForwardTopic(CONFIG, '')).toThrow(expect.objectContaining({ code: 107 }))
  })

  it('accepts qos 0, 1, 2 (numbers or text) and refuses others with 116', () => {
    expect([checkQos(0), checkQos('1'), checkQos(2)]).toEqual([0, 1, 2])
    for (const bad of [3, -1, '3', 'one', 1.5, null, '01']) expect(() => checkQos(bad)).toThrow(expect.objectContaining({ code: 116 }))
  })
})

describe('bridge operations through the RPC', () => {
  it('answers "not loaded" (102, HTTP 400) while svc_bridge_mqtt has not registered them', async () => {
    const rpc = new NodeRpc('n1@h')
    await expect(nodeBridges(rpc, 'n1@h')).rejects.toMatchObject({
      code: 102, status: 400, message: 'plugin svc_bridge_mqtt is not loaded on n1@h; load it first with `starling-ctl plugins load svc_bridge_mqtt`'
    })
    // the cluster-wide list counts such a node as one without bridges
    expect(await clusterBridges(rpc)).toEqual({ items: [], failed: [] })
  })

  it('lists by name, finds one, and answers 404 naming the known ones', async () => {
    const rpc = new NodeRpc('n1@h')
    fakePlugin(rpc, [info('zeta'), info('aws')])
    expect((await nodeBridges(rpc, 'n1@h')).map(b => b.name)).toEqual(['aws', 'zeta'])
    expect((await nodeBridge(rpc, 'n1@h', 'aws')).name).toBe('aws')
    await expect(nodeBridge(rpc, 'n1@h', 'nope')).rejects.toMatchObject({ code: 102, status: 404, message: 'bridge nope not found; bridges on n1@h: aws, zeta' })
    const all = await clusterBridges(rpc)
    expect(all.items.map(b => `${b.node}/${b.name}`)).toEqual(['n1@h/aws', 'n1@h/zeta'])
  })
})

describe('bridges handlers', () => {
  const setup = (): { handlers: ReturnType<typeof bridgeHandlers>, bridges: BridgeInfo[] } => {
    const rpc = new NodeRpc('n1@h')
    const bridges = [info('aws')]
    fakePlugin(rpc, bridges)
    return { handlers: bridgeHandlers({ name: 'n1@h', rpc, config: CONFIG }), bridges }
  }
  const call = async (h: ReturnType<typeof bridgeHandlers>, command: string, ...args: string[]): Promise<unknown> => await h[command]({ args, options: {} })

  it('starts and stops once, changes forwards and subscriptions', async () => {
    const { handlers, bridges } = setup()
    expect(await call(handlers, 'bridges start', 'aws')).toBe(true)
    expect(await call(handlers, 'bridges start', 'aws')).toBe(false)
    expect(await call(handlers, 'bridges stop', 'aws')).toBe(true)
    expect(await call(handlers, 'bridges stop', 'aws')).toBe(false)
    expect(await call(handlers, 'bridges add-forward', 'aws', 'a/#')).toBeNull()
    expect(await call(handlers, 'bridges forwards', 'aws')).toEqual(['a/#'])
    expect(await call(handlers, 'bridges add-subscription', 'aws', 'cmd/#', '1')).toBeNull()
    expect(bridges[0].subscriptions).toEqual([{ topic: 'cmd/#', qos: 1 }])
    expect(await call(handlers, 'bridges del-subscription', 'aws', 'cmd/#')).toBeNull()
    expect(await call(handlers, 'bridges del-forward', 'aws', 'a/#')).toBeNull()
    expect(bridges[0]).toMatchObject({ forwards: [], subscriptions: [] })
  })

  it('answers failures with EMQ X\'s failure text, the reason and its code', async () => {
    const { handlers } = setup()
    await expect(call(handlers, 'bridges start', 'nope')).rejects.toMatchObject({ code: 102, message: 'Start bridge failed. bridge nope not found; bridges list shows the known ones' })
    await expect(call(handlers, 'bridges stop', 'nope')).rejects.toMatchObject({ message: expect.stringMatching(/^Stop bridge failed\. bridge nope not found/) })
    await expect(call(handlers, 'bridges add-subscription', 'aws', 'cmd/#', '3')).rejects.toMatchObject({ code: 116, message: 'Add-subscription failed reason: qos must be 0, 1 or 2, not "3".' })
    await expect(call(handlers, 'bridges add-forward', 'aws', 'a/#/b')).rejects.toMatchObject({ code: 115, message: expect.stringMatching(/^Add-forward failed reason: bad topic filter "a\/#\/b"/) })
    await expect(call(handlers, 'bridges forwards', 'nope')).rejects.toMatchObject({ code: 102, message: expect.stringContaining('bridge nope not found') })
  })

  it('answers every command with "not loaded" while the plugin is not', async () => {
    const handlers = bridgeHandlers({ name: 'n1@h', rpc: new NodeRpc('n1@h'), config: CONFIG })
    for (const command of Object.keys(handlers)) {
      await expect(call(handlers, command, 'aws', 'a/#', '1')).rejects.toMatchObject({ message: expect.stringMatching(/^plugin svc_bridge_mqtt is not loaded on n1@h/) })
    }
  })
})

describe('bridges $SYS topics and metrics', () => {
  function sysNode (bridges: BridgeInfo[] | null): { node: Parameters<typeof createBridgesSys>[0], published: Array<[string, string]> } {
    const rpc = new NodeRpc('n1@h')
    if (bridges !== null) rpc.register(BRIDGE_OPS.list, () => bridges.map(b => ({ ...b })))
    const published: Array<[string, string]> = []
    const core = {
      closed: false,
      publishWith: (packet: { topic: string, payload: Buffer }, cb: (err?: Error) => void) => { published.push([packet.topic, packet.payload.toString()]); cb() }
    }
    return { node: { name: 'n1@h', config: { 'broker.sys_interval': 0 }, broker: { core } as any, rpc, metrics: createMetrics(), logger: silentLogger() }, published }
  }

  it('publishes status and counts per bridge under $SYS/brokers/<node>/bridges/<name>/', async () => {
    const { node, published } = sysNode([info('aws', { status: 'connected', sent: 5, received: 2, buffered: 3, dropped: 1 })])
    await createBridgesSys(node).tick()
    expect(published).toEqual([
      ['$SYS/brokers/n1@h/bridges/aws/status', 'connected'],
      ['$SYS/brokers/n1@h/bridges/aws/sent', '5'],
      ['$SYS/brokers/n1@h/bridges/aws/received', '2'],
      ['$SYS/brokers/n1@h/bridges/aws/buffered', '3'],
      ['$SYS/brokers/n1@h/bridges/aws/dropped', '1']
    ])
    expect(bridgeSysMessages('n', info('x')).map(m => m[0])).toEqual(['status', 'sent', 'received', 'buffered', 'dropped'].map(l => `$SYS/brokers/n/bridges/x/${l}`))
  })

  it('publishes nothing and counts nothing while the plugin is not loaded', async () => {
    const { node, published } = sysNode(null)
    await createBridgesSys(node).tick()
    expect(published).toEqual([])
    expect(node.metrics['bridge.mqtt.sent']).toBe(0)
  })

  it('sums what every bridge counted since the last sample into counters that only grow', async () => {
    const bridges = [info('a', { sent: 10, received: 1, dropped: 0 }), info('b', { sent: 5, received: 0, dropped: 2 })]
    const { node } = sysNode(bridges)
    const sys = createBridgesSys(node)
    await sys.sample()
    expect([node.metrics['bridge.mqtt.sent'], node.metrics['bridge.mqtt.received'], node.metrics['bridge.mqtt.dropped']]).toEqual([15, 1, 2])
    bridges[0].sent = 12
    await sys.sample()
    await sys.sample()
    expect(node.metrics['bridge.mqtt.sent']).toBe(17)
    // a bridge restarted with the plugin counts from 0 again: its new count is added
    bridges[1].sent = 3
    await sys.sample()
    expect(node.metrics['bridge.mqtt.sent']).toBe(20)
    // a bridge gone and back again starts over too
    bridges.splice(0, 1)
    await sys.sample()
    bridges.push(info('a', { sent: 4 }))
    await sys.sample()
    expect(node.metrics['bridge.mqtt.sent']).toBe(24)
  })

  it('runs every broker.sys_interval once started, and stops', async () => {
    jest.useFakeTimers()
    try {
      const { node, published } = sysNode([info('aws', { sent: 1 })])
      const sys = createBridgesSys({ ...node, config: { 'broker.sys_interval': 20 } })
      sys.start()
      await jest.advanceTimersByTimeAsync(45)
      expect(published.length).toBe(10) // two rounds of five topics
      await jest.advanceTimersByTimeAsync(1000)
      expect(node.metrics['bridge.mqtt.sent']).toBe(1) // sampled often, counted once
      sys.stop()
      const count = published.length
      await jest.advanceTimersByTimeAsync(1000)
      expect(published.length).toBe(count)
    } finally {
      jest.useRealTimers()
    }
  })
})
