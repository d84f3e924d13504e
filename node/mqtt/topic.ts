/**
 * Topic names and topic filters: validation and matching as MQTT 3.1.1 §4.7 and
 * MQTT 5.0 §4.7 define them, plus the shared-subscription forms `$share/<group>/<filter>`
 * and `$queue/<filter>` (EMQ X).
 */

/** Prefix the wire layer writes in place of `$share/` so aedes treats it as a plain filter. */
export const SHARE_MARKER = '\u0000share/'

const SLASH = 47
const PLUS = 43
const HASH = 35
const DOLLAR = 36

/** Why a filter is invalid, or null when it is valid. [MQTT-4.7.1-1..3] */
export function filterError (filter: string, maxLevels = 0): string | null {
  if (filter.length === 0) return 'empty topic filter'
  if (filter.indexOf('\u0000') !== -1) return 'topic filter contains U+0000'
  let levels = 1
  const end = filter.length - 1
  for (let i = 0; i < filter.length; i++) {
    const c = filter.charCodeAt(i)
    if (c === SLASH) levels++
    else if (c === HASH) {
      // '#' must be the whole last level [MQTT-4.7.1-2]
      if (i !== end || (i > 0 && filter.charCodeAt(i - 1) !== SLASH)) return "'#' must be the last level on its own"
    } else if (c === PLUS) {
      // '+' must occupy a whole level [MQTT-4.7.1-3]
      if ((i > 0 && filter.charCodeAt(i - 1) !== SLASH) || (i < end && filter.charCodeAt(i + 1) !== SLASH)) {
        return "'+' must occupy a whole level"
      }
    }
  }
  if (maxLevels > 0 && levels > maxLevels) return `more than ${maxLevels} topic levels`
  return null
}

/** Why a topic name (for PUBLISH) is invalid, or null. [MQTT-4.7.3-1], [MQTT-3.3.2-2] */
export function topicNameError (topic: string, maxLevels = 0): string | null {
  if (topic.length === 0) return 'empty topic'
  if (topic.indexOf('#') !== -1 || topic.indexOf('+') !== -1) return 'wildcards are not allowed in a topic name'
  if (topic.indexOf('\u0000') !== -1) return 'topic contains U+0000'
  if (maxLevels > 0) {
    let levels = 1
    for (let i = 0; i < topic.length; i++) if (topic.charCodeAt(i) === SLASH) levels++
    if (levels > maxLevels) return `more than ${maxLevels} topic levels`
  }
  return null
}

/** A parsed shared subscription: the group and the real filter. */
export interface SharedFilter { group: string, filter: string }

/**
 * Parses `$share/<group>/<filter>`, its wire-marked form, or `$queue/<filter>` (group `$queue`).
 * Returns null for a filter that is not shared, and throws for a malformed shared one.
 */
export function parseShared (filter: string): SharedFilter | null {
  let rest: string
  if (filter.startsWith('$share/')) rest = filter.slice(7)
  else if (filter.startsWith(SHARE_MARKER)) rest = filter.slice(SHARE_MARKER.length)
  else if (filter.startsWith('$queue/')) return { group: '$queue', filter: filter.slice(7) }
  else return null
  const slash = rest.indexOf('/')
  if (slash <= 0) throw new Error('shared subscription needs $share/<group>/<filter>')
  const group = rest.slice(0, slash)
  if (group.indexOf('+') !== -1 || group.indexOf('#') !== -1) throw new Error('share group must not contain wildcards')
  return { group, filter: rest.slice(slash + 1) }
}

/** The filter as the user wrote it: the wire marker turned back into `$share/`. */
export function displayFilter (filter: string): string {
  return filter.startsWith(SHARE_MARKER) ? '$share/' + filter.slice(SHARE_MARKER.length) : filter
}

/**
 * True when `filter` matches `topic`. Wildcards at the first level never match a topic
 * starting with `$` [MQTT-4.7.2-1]. Used off the hot path (ACL, retained, API); the
 * router has its own trie.
 */
export function topicMatches (filter: string, topic: string): boolean {
  if (topic.charCodeAt(0) === DOLLAR) {
    const c = filter.charCodeAt(0)
    if (c === PLUS || c === HASH) return false
  }
  const f = filter.split('/')
  const t = topic.split('/')
  for (let i = 0; i < f.length; i++) {
    const level = f[i]
    if (level === '#') return true
    if (i >= t.length) return false
    if (level !== '+' && level !== t[i]) return false
  }
  return f.length === t.length
}

/** Number of levels in a topic or filter. */
export function topicLevels (topic: string): number {
  let n = 1
  for (let i = 0; i < topic.length; i++) if (topic.charCodeAt(i) === SLASH) n++
  return n
}
