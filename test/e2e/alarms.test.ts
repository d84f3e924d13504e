/**
 * Alarms (spec: "Alarm", "Alarms" events): the node's OS monitor raises and clears them by
 * the `os_mon.*` / `vm_mon.*` thresholds; raising and clearing publish
 * `$SYS/brokers/<node>/alarms/activate|deactivate`; cleared alarms go to the history, which
 * survives a restart.
 */
import { existsSync } from 'node:fs'
import { jest } from '@jest/globals'
import { startTestNode, connect, closeClients, waitFor, type TestNode } from '../helpers/node.js'
import { systemProbes } from '../../node/alarms/index.js'

/**
 * Thresholds no machine reaches (a share can't go above 100%), so the node's own monitor
 * raises nothing a test did not ask for; a test lowers the one it is about.
 */
const QUIET: Record<string, string> = {
  'broker.sys_interval': '0',
  'broker.sys_heartbeat': '0',
  'os_mon.cpu_high_watermark': '100%',
  'os_mon.cpu_low_watermark': '100%',
  'os_mon.sysmem_high_watermark': '100%',
  'os_mon.procmem_high_watermark': '100%',
  'vm_mon.process_high_watermark': '100%',
  'vm_mon.process_low_watermark': '100%'
}

/** The test's node, the last one {@link start} started. */
let node: TestNode
/** Nodes started by the test, destroyed after it. */
const started: TestNode[] = []

/** Starts the test's node (its services, the OS monitor and the alarms included) with QUIET and `overrides`. */
async function start (overrides: Record<string, string> = {}, dataDir?: string): Promise<TestNode> {
  node = await startTestNode({ ...QUIET, ...overrides }, dataDir)
  started.push(node)
  return node
}

afterEach(async () => {
  await closeClients()
  for (const n of started.splice(0).reverse()) await n.destroy()
  // the measurements the node's monitor takes come from systemProbes: give them back
  jest.restoreAllMocks()
})

async function watchAlarms (): Promise<Array<{ topic: string, body: any }>> {
  const c = await connect(node, { clientId: 'alarm-watch' })
  const out: Array<{ topic: string, body: any }> = []
  c.on('message', (topic, payload) => out.push({ topic, body: JSON.parse(payload.toString()) }))
  await c.subscribeAsync('$SYS/brokers/+/alarms/#')
  return out
}

// The node's configuration is fixed once started, so to move a measurement across a
// threshold the tests below change what the node's own monitor measures: they spy on
// systemProbes, the probes the node's OS monitor reads at every check (no second monitor).
describe('OS monitor alarms', () => {
  it('raises system_memory_high_watermark above os_mon.sysmem_high_watermark, and clears it below', async () => {
    const { total } = systemProbes.systemMemory()
    const machine = systemProbes.systemMemory.bind(systemProbes)
    let idle = true // the machine's memory as unused until the test looks: no alarm at start
    const memory = jest.spyOn(systemProbes, 'systemMemory').mockImplementation(() => idle ? { total, available: total } : machine())
    // as a user writes them in etc/starling.conf
    await start({ 'os_mon.sysmem_high_watermark': '1%', 'os_mon.mem_check_interval': '20ms' })
    const alarms = node.services.alarms
    expect(alarms.present()).toEqual([])
    const seen = await watchAlarms()

    idle = false // the machine's real use, above 1% on any machine that runs the test
    const activate = `$SYS/brokers/${node.name}/alarms/activate`
    await waitFor(() => seen.some(m => m.topic === activate), 'activate message')
    const raised = seen.find(m => m.topic === activate)!.body
    expect(raised).toEqual({
      id: 'system_memory_high_watermark',
      desc: expect.stringContaining('above os_mon.sysmem_high_watermark 1%'),
      level: 'system',
      details: { usage: expect.stringMatching(/^\d+\.\d\d%$/), used: expect.any(Number), total, high_watermark: '1%' },
      activate_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
    })
    expect(alarms.present().map(a => a.id)).toEqual(['system_memory_high_watermark'])
    expect(alarms.history()).toEqual([])
    // more checks above the watermark raise nothing more
    const checks = memory.mock.calls.length
    await waitFor(() => memory.mock.calls.length >= checks + 3, 'three more checks')

    idle = true
    const deactivate = `$SYS/brokers/${node.name}/alarms/deactivate`
    await waitFor(() => seen.some(m => m.topic === deactivate), 'deactivate message')
    expect(seen.find(m => m.topic === deactivate)!.body).toMatchObject({ id: 'system_memory_high_watermark', clear_at: expect.stringMatching(/^\d{4}-/) })
    expect(alarms.present()).toEqual([])
    await alarms.flushed()
    expect(alarms.history()).toEqual([expect.objectContaining({ id: 'system_memory_high_watermark', desc: raised.desc, clear_at: expect.any(String) })])
    // raised once, cleared once, whatever the number of checks
    expect(seen.filter(m => m.topic === activate)).toHaveLength(1)
    expect(seen.filter(m => m.topic === deactivate)).toHaveLength(1)
  })

  it('raises process_memory_high_watermark when the node uses more than os_mon.procmem_high_watermark of the memory', async () => {
    await start({ 'os_mon.procmem_high_watermark': '0.001%', 'os_mon.mem_check_interval': '20ms' })
    const alarms = node.services.alarms
    await waitFor(() => alarms.isActive('process_memory_high_watermark'), 'process memory alarm')
    expect(alarms.present()).toHaveLength(1)
    expect(alarms.present()[0].details).toMatchObject({ rss: expect.any(Number), high_watermark: '0.001%' })
  })

  it('raises too_many_processes above vm_mon.process_high_watermark of the open-files limit and clears it below the low one', async () => {
    if (!existsSync('/proc/self/fd')) return // counted from /proc only
    // the node's real open descriptors, against a limit chosen so they are `share` of it
    const machine = systemProbes.fileDescriptors.bind(systemProbes)
    let share = 0.6
    const fds = jest.spyOn(systemProbes, 'fileDescriptors').mockImplementation(() => {
      const real = machine()
      return real === null ? null : { open: real.open, limit: Math.ceil(real.open / share) }
    })
    await start({ 'vm_mon.process_high_watermark': '50%', 'vm_mon.process_low_watermark': '25%', 'vm_mon.check_interval': '20ms' })
    const alarms = node.services.alarms
    await waitFor(() => alarms.isActive('too_many_processes'), 'too_many_processes')
    expect(alarms.present()[0].details).toMatchObject({ open: expect.any(Number), limit: expect.any(Number), high_watermark: '50%', low_watermark: '25%' })
    share = 0.4
    const checks = fds.mock.calls.length
    await waitFor(() => fds.mock.calls.length >= checks + 3, 'three checks between the watermarks')
    expect(alarms.isActive('too_many_processes')).toBe(true) // between the watermarks: stays
    share = 0.1
    await waitFor(() => !alarms.isActive('too_many_processes'), 'cleared')
  })
})

describe('alarm registry', () => {
  it('raises an alarm once, clears it once, and keeps the history across a restart', async () => {
    await start()
    const alarms = node.services.alarms
    const seen = await watchAlarms()
    expect(alarms.activate('partitioned', 'cluster split', { nodes: ['a@h', 'b@h'] })).toBe(true)
    expect(alarms.activate('partitioned', 'cluster split again')).toBe(false)
    expect(alarms.present()).toEqual([{ id: 'partitioned', desc: 'cluster split', level: 'cluster', details: { nodes: ['a@h', 'b@h'] }, activate_at: expect.any(String) }])
    expect(alarms.deactivate('partitioned')).toBe(true)
    expect(alarms.deactivate('partitioned')).toBe(false)
    await waitFor(() => seen.length === 2, 'two messages')
    expect(seen.map(m => m.topic.split('/').pop())).toEqual(['activate', 'deactivate'])
    await alarms.flushed()

    const dir = node.dataDir
    await node.stop()
    await start({}, dir)
    const again = node.services.alarms
    expect(again.present()).toEqual([])
    expect(again.history()).toEqual([expect.objectContaining({ id: 'partitioned', desc: 'cluster split', clear_at: expect.any(String) })])
  })

  it('keeps the newest 1000 history entries, newest first', async () => {
    await start()
    const alarms = node.services.alarms
    for (let i = 0; i < 1003; i++) {
      alarms.activate('cpu_high_watermark', `spike ${i}`)
      alarms.deactivate('cpu_high_watermark')
    }
    await alarms.flushed()
    await waitFor(() => alarms.history().length === 1000, '1000 entries')
    const history = alarms.history()
    expect(history[0].desc).toBe('spike 1002')
    expect(history[999].desc).toBe('spike 3')
  })
})
