import { silentLogger } from '../../../node/logger.js'
import { createOsMonitor, type Alarms, type OsMonitorConfig, type OsProbes } from '../../../node/alarms/index.js'
import { cpuUsage, parseMeminfo, parseOpenFilesLimit } from '../../../node/alarms/os-probes.js'

/** An alarm registry that only remembers what is present. */
function memoryAlarms (): Alarms & { log: string[] } {
  const active = new Map<string, string>()
  const log: string[] = []
  return {
    log,
    activate (id, desc) { if (active.has(id)) return false; active.set(id, desc); log.push(`+${id}`); return true },
    deactivate (id) { if (!active.delete(id)) return false; log.push(`-${id}`); return true },
    isActive: (id) => active.has(id),
    present: () => [...active].map(([id, desc]) => ({ id, desc, level: 'system', details: {}, activate_at: '' })),
    history: () => [],
    flushed: async () => {}
  }
}

const config: OsMonitorConfig = {
  'os_mon.cpu_check_interval': 60000,
  'os_mon.cpu_high_watermark': 0.8,
  'os_mon.cpu_low_watermark': 0.6,
  'os_mon.mem_check_interval': 60000,
  'os_mon.sysmem_high_watermark': 0.7,
  'os_mon.procmem_high_watermark': 0.05,
  'vm_mon.check_interval': 60000,
  'vm_mon.process_high_watermark': 0.8,
  'vm_mon.process_low_watermark': 0.6
}

describe('OS monitor thresholds', () => {
  it('raises cpu_high_watermark above the high watermark and clears it only below the low one', () => {
    // usage per check: idle grows by 100 - load out of 100
    let idle = 0
    let total = 0
    const probes: OsProbes = {
      cpuTimes: () => ({ idle, total }),
      systemMemory: () => ({ total: 100, available: 50 }),
      processMemory: () => 1,
      fileDescriptors: () => ({ open: 10, limit: 100 })
    }
    const step = (load: number): void => { total += 100; idle += 100 - load }
    const alarms = memoryAlarms()
    const m = createOsMonitor({ config, logger: silentLogger() }, alarms, probes)
    m.checkCpu() // first reading: nothing to compare with
    for (const load of [50, 90, 70, 61, 59, 85]) { step(load); m.checkCpu() }
    expect(alarms.log).toEqual(['+cpu_high_watermark', '-cpu_high_watermark', '+cpu_high_watermark'])
  })

  it('raises and clears the memory alarms at their watermark', () => {
    let available = 50
    let rss = 1
    const probes: OsProbes = {
      cpuTimes: () => ({ idle: 0, total: 0 }),
      systemMemory: () => ({ total: 100, available }),
      processMemory: () => rss,
      fileDescriptors: () => null
    }
    const alarms = memoryAlarms()
    const m = createOsMonitor({ config, logger: silentLogger() }, alarms, probes)
    m.checkMemory()
    available = 20
    rss = 6
    m.checkMemory()
    available = 40
    rss = 5
    m.checkMemory()
    expect(alarms.log).toEqual(['+system_memory_high_watermark', '+process_memory_high_watermark', '-system_memory_high_watermark', '-process_memory_high_watermark'])
  })

  it('raises too_many_processes by open descriptors against the limit, with hysteresis', () => {
    let open = 10
    const probes: OsProbes = {
      cpuTimes: () => ({ idle: 0, total: 0 }),
      systemMemory: () => ({ total: 100, available: 100 }),
      processMemory: () => 0,
      fileDescriptors: () => ({ open, limit: 100 })
    }
    const alarms = memoryAlarms()
    const m = createOsMonitor({ config, logger: silentLogger() }, alarms, probes)
    for (const n of [10, 81, 70, 59]) { open = n; m.checkProcesses() }
    expect(alarms.log).toEqual(['+too_many_processes', '-too_many_processes'])
  })
})

describe('OS probes', () => {
  it('computes CPU usage between two readings', () => {
    expect(cpuUsage({ idle: 100, total: 200 }, { idle: 150, total: 400 })).toBeCloseTo(0.75)
    expect(cpuUsage({ idle: 1, total: 1 }, { idle: 1, total: 1 })).toBe(0)
  })

  it('reads the open-files soft limit and the memory figures of /proc', () => {
    const limits = 'Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 1048576              files\n'
    expect(parseOpenFilesLimit(limits)).toBe(1024)
    expect(parseOpenFilesLimit('Max open files            unlimited            unlimited            files\n')).toBe(Infinity)
    expect(parseMeminfo('MemTotal:       16000000 kB\nMemFree:  100 kB\nMemAvailable:    8000000 kB\n')).toEqual({ total: 16000000 * 1024, available: 8000000 * 1024 })
  })
})
