/** Rule counters: speed per sample period, the peak, and the 5-minute average. */
import { EngineMetrics, RuleCounters } from '../../../rules/metrics.js'

describe('RuleCounters', () => {
  it('computes speed, speed_max and speed_last5m from samples', () => {
    const c = new RuleCounters()
    c.matched = 10
    c.sample(5000)
    expect(c.speed).toBe(2)
    c.matched = 40
    c.sample(5000)
    expect([c.speed, c.speedMax, c.last5m()]).toEqual([6, 6, 4])
    c.sample(5000)
    expect([c.speed, c.speedMax, c.last5m()]).toEqual([0, 6, 2.67])
  })

  it('averages only the last 5 minutes of samples', () => {
    const c = new RuleCounters()
    c.matched = 5000
    c.sample(5000)
    for (let i = 0; i < 60; i++) c.sample(5000)
    expect(c.last5m()).toBe(0)
    expect(c.speedMax).toBe(1000)
  })
})

describe('EngineMetrics', () => {
  it('keeps counters by id and drops those of deleted rules and actions', () => {
    const m = new EngineMetrics()
    m.rule('r1').matched++
    m.action('a1').success++
    m.rule('r2').matched++
    m.retainOnly(new Set(['r1']), new Set())
    expect(m.findRule('r1')?.matched).toBe(1)
    expect(m.findRule('r2')).toBeUndefined()
    expect(m.findAction('a1')).toBeUndefined()
  })
})
