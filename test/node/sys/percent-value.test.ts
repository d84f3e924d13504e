/** The `percent` value type of the configuration (EMQ X's `80%` thresholds). */
import { parsePercent, formatPercent } from '../../../node/config/value-types.js'
import { loadConfig } from '../../../node/config/index.js'

describe('percent values', () => {
  it.each([['80%', 0.8], ['0%', 0], ['100%', 1], ['2.5%', 0.025], [' 70% ', 0.7]])('reads %s as %d', (text, value) => {
    expect(parsePercent(text)).toBeCloseTo(value, 10)
  })

  it.each(['80', '0.8', '101%', '-1%', '%', '8 0%', 'abc'])('refuses %s', (text) => {
    expect(parsePercent(text)).toBeUndefined()
  })

  it('writes fractions back as percentages that read the same', () => {
    for (const text of ['80%', '0%', '100%', '2.5%', '70%', '0.001%']) expect(formatPercent(parsePercent(text)!)).toBe(text)
  })

  it('loads the os_mon and vm_mon watermarks as fractions, and refuses a value without %', () => {
    const cfg = loadConfig({ env: {}, cwd: '/nonexistent', overrides: { 'os_mon.cpu_high_watermark': '85%' } })
    expect(cfg['os_mon.cpu_high_watermark']).toBeCloseTo(0.85)
    expect(cfg['os_mon.sysmem_high_watermark']).toBeCloseTo(0.7)
    expect(cfg['vm_mon.process_low_watermark']).toBeCloseTo(0.6)
    expect(() => loadConfig({ env: {}, cwd: '/nonexistent', overrides: { 'os_mon.cpu_high_watermark': '85' } }))
      .toThrow(/os_mon\.cpu_high_watermark.*a percentage such as 80% or 2\.5% from 0% to 100%/)
  })
})
