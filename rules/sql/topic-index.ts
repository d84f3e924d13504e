/**
 * Topic filters indexed in a trie of levels, each filter with the values it stands for (the
 * EMQ X 4 rules whose FROM names it): which values a topic matches costs one walk down the
 * topic's levels, however many filters there are, instead of one `topicMatch` (topic-match.ts)
 * per filter. Matching follows node/mqtt/topic.ts: `+` is one level, `#` the rest (including
 * none), and a wildcard in the first level never matches a topic starting with `$`
 * [MQTT-4.7.2-1].
 */

const DOLLAR = 36

class Level<T> {
  readonly children = new Map<string, Level<T>>()
  /** Values of the filters that end at this level. */
  readonly values: T[] = []
}

/** Topic filters and their values. Filters are assumed valid (`#` only as the last level). */
export class TopicIndex<T> {
  private readonly root = new Level<T>()
  private count = 0

  /** Whether no filter was added. */
  get empty (): boolean {
    return this.count === 0
  }

  /** Adds `value` under `filter`. */
  add (filter: string, value: T): void {
    let level = this.root
    for (const name of filter.split('/')) {
      let child = level.children.get(name)
      if (child === undefined) level.children.set(name, child = new Level<T>())
      level = child
    }
    level.values.push(value)
    this.count++
  }

  /**
   * Appends to `out` the values of each filter `topic` matches, one array per filter (in
   * the order the values were added; the arrays are the index's own: do not change them).
   */
  match (topic: string, out: Array<readonly T[]>): Array<readonly T[]> {
    collect(this.root, topic, 0, out)
    return out
  }
}

/**
 * The values under `level` matching the rest of `topic`, which starts at `start` (-1: every
 * level of the topic is consumed). Per level, its name is sliced; nothing else is allocated.
 */
function collect<T> (level: Level<T>, topic: string, start: number, out: Array<readonly T[]>): void {
  const hash = level.children.get('#')
  if (start === -1) {
    // `a/#` matches `a` too
    if (level.values.length > 0) out.push(level.values)
    if (hash !== undefined) out.push(hash.values)
    return
  }
  const wildcards = start !== 0 || topic.charCodeAt(0) !== DOLLAR
  if (wildcards && hash !== undefined) out.push(hash.values)
  const slash = topic.indexOf('/', start)
  const next = slash === -1 ? -1 : slash + 1
  const exact = level.children.get(slash === -1 ? topic.slice(start) : topic.slice(start, slash))
  if (exact !== undefined) collect(exact, topic, next, out)
  const plus = wildcards ? level.children.get('+') : undefined
  if (plus !== undefined) collect(plus, topic, next, out)
}
