import { LatencyHistogram } from '../../bench/latency-histogram.js'
import { median } from '../../bench/report.js'

describe('bench latency histogram', () => {
  it('reports percentiles within one bucket (about 2 %) of the exact value', () => {
    const h = new LatencyHistogram()
    for (let us = 1; us <= 10_000; us++) h.record(us)
    expect(h.percentile(50) / 5000).toBeCloseTo(1, 1)
    expect(h.percentile(99) / 9900).toBeCloseTo(1, 1)
    expect(h.max).toBe(10_000)
  })

  it('merges histograms from several workers', () => {
    const a = new LatencyHistogram()
    const b = new LatencyHistogram()
    for (let i = 0; i < 99; i++) a.record(100)
    b.record(1_000_000)
    a.merge(new LatencyHistogram(b.counts))
    expect(a.total).toBe(100)
    expect(a.percentile(50) / 100).toBeCloseTo(1, 1)
    expect(a.percentile(100) / 1_000_000).toBeCloseTo(1, 1)
  })

  it('returns NaN when empty', () => {
    expect(new LatencyHistogram().percentile(50)).toBeNaN()
  })
})

describe('bench report median', () => {
  it('ignores missing values and averages the middle pair', () => {
    expect(median([3, null, 1, 2])).toBe(2)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([null, undefined])).toBeNull()
  })
})
