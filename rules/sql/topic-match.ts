/**
 * Topic matching for `=~` and for EMQ X 4's topic filters after FROM, without splitting
 * strings (rule evaluation is a hot path). Same rules as node/mqtt/topic.ts `topicMatches`:
 * `+` is one level, `#` the rest (including none), and a topic starting with `$` is never
 * matched by a wildcard in the first level [MQTT-4.7.2-1].
 */

const SLASH = 47
const PLUS = 43
const HASH = 35
const DOLLAR = 36

/** True when `topic` matches `filter`. The filter is assumed valid (`#` only as the last level). */
export function topicMatch (topic: string, filter: string): boolean {
  const tl = topic.length
  const fl = filter.length
  if (tl > 0 && topic.charCodeAt(0) === DOLLAR) {
    const f0 = filter.charCodeAt(0)
    if (f0 === PLUS || f0 === HASH) return false
  }
  let ti = 0
  let fi = 0
  for (;;) {
    // both at the start of a level
    const f = filter.charCodeAt(fi)
    if (fi < fl && f === HASH) return true
    if (fi < fl && f === PLUS) {
      while (ti < tl && topic.charCodeAt(ti) !== SLASH) ti++
      fi++
    } else {
      while (fi < fl && filter.charCodeAt(fi) !== SLASH) {
        if (ti >= tl || topic.charCodeAt(ti) !== filter.charCodeAt(fi)) return false
        ti++
        fi++
      }
      if (ti < tl && topic.charCodeAt(ti) !== SLASH) return false
    }
    // both at the end of a level
    const filterDone = fi >= fl
    const topicDone = ti >= tl
    if (filterDone) return topicDone
    fi++ // the filter's '/'
    if (topicDone) return fi < fl && filter.charCodeAt(fi) === HASH && fi + 1 === fl
    ti++ // the topic's '/'
  }
}
