/**
 * Per-rule and per-action counters of one node (spec: Rule statistics: hits, hit rate, peak
 * hit rate, 5-minute average hit rate; named as EMQ X 4's API named them: `matched`,
 * `speed`, `speed_max`, `speed_last5m`). In memory: they start at 0 when the node starts.
 *
 * Rates are sampled every {@link SAMPLE_MS}: `speed` is the matches per second during the
 * last sample period, `speed_max` the highest `speed` seen, `speed_last5m` the average of the
 * samples of the last 5 minutes (fewer while the rule is younger than that).
 */

/** Sampling period of the rates, in milliseconds (EMQ X 4 sampled every 5 s too). */
export const SAMPLE_MS = 5000
/** Samples in 5 minutes. */
const SAMPLES_5M = (5 * 60 * 1000) / SAMPLE_MS

/** The counters of one rule; the runtime increments `matched` / `failed` directly. */
export class RuleCounters {
  matched = 0
  failed = 0
  speed = 0
  speedMax = 0
  private lastMatched = 0
  private readonly samples: number[] = []
  private sum = 0

  /** Takes one rate sample covering `periodMs`. */
  sample (periodMs: number): void {
    const delta = this.matched - this.lastMatched
    this.lastMatched = this.matched
    this.speed = round2(delta * 1000 / periodMs)
    if (this.speed > this.speedMax) this.speedMax = this.speed
    this.samples.push(this.speed)
    this.sum += this.speed
    if (this.samples.length > SAMPLES_5M) this.sum -= this.samples.shift()!
  }

  /** Back to zero: counts, rates and the 5-minute samples (`PUT /rules/:id/reset_metrics`). */
  reset (): void {
    this.matched = 0
    this.failed = 0
    this.speed = 0
    this.speedMax = 0
    this.lastMatched = 0
    this.samples.length = 0
    this.sum = 0
  }

  /** The 5-minute average rate. */
  last5m (): number {
    return this.samples.length === 0 ? 0 : round2(this.sum / this.samples.length)
  }
}

/** The counters of one action instance. */
export class ActionCounters {
  taken = 0
  success = 0
  failed = 0

  /** Back to zero. An action run under way when reset is counted as it ends. */
  reset (): void {
    this.taken = 0
    this.success = 0
    this.failed = 0
  }
}

function round2 (n: number): number {
  return Math.round(n * 100) / 100
}

/** The counters of every rule and action instance of one rule engine, and the sampler. */
export class EngineMetrics {
  private readonly rules = new Map<string, RuleCounters>()
  private readonly actions = new Map<string, ActionCounters>()
  private timer: NodeJS.Timeout | null = null
  private lastSample = Date.now()

  /** The counters of a rule (created on first use). */
  rule (id: string): RuleCounters {
    let c = this.rules.get(id)
    if (c === undefined) this.rules.set(id, c = new RuleCounters())
    return c
  }

  /** The counters of an action instance (created on first use). */
  action (id: string): ActionCounters {
    let c = this.actions.get(id)
    if (c === undefined) this.actions.set(id, c = new ActionCounters())
    return c
  }

  /** Drops the counters of rules and action instances that no longer exist. */
  retainOnly (ruleIds: ReadonlySet<string>, actionIds: ReadonlySet<string>): void {
    for (const id of this.rules.keys()) if (!ruleIds.has(id)) this.rules.delete(id)
    for (const id of this.actions.keys()) if (!actionIds.has(id)) this.actions.delete(id)
  }

  /** Sets the counters of rule `ruleId` and of the action instances `actionIds` back to zero. */
  reset (ruleId: string, actionIds: readonly string[]): void {
    this.rules.get(ruleId)?.reset()
    for (const id of actionIds) this.actions.get(id)?.reset()
  }

  /** The counters of a rule if it has any. */
  findRule (id: string): RuleCounters | undefined {
    return this.rules.get(id)
  }

  /** The counters of an action instance if it has any. */
  findAction (id: string): ActionCounters | undefined {
    return this.actions.get(id)
  }

  /** Samples every rule's rate now (the timer does it every {@link SAMPLE_MS}). */
  sampleNow (): void {
    const now = Date.now()
    const period = Math.max(1, now - this.lastSample)
    this.lastSample = now
    for (const c of this.rules.values()) c.sample(period)
  }

  /** Starts the sampler (unref'd: it never keeps the process alive). */
  start (): void {
    if (this.timer !== null) return
    this.lastSample = Date.now()
    this.timer = setInterval(() => this.sampleNow(), SAMPLE_MS)
    this.timer.unref()
  }

  stop (): void {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
  }
}
