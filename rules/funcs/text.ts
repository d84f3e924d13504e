/**
 * Text primitives shared by the string functions. Erlang's `string` module works on grapheme
 * clusters, not code units: `strlen('你好')` is 2, and `"\r\n"` is one grapheme, so splitting
 * CRLF text on `"\n"` finds nothing. These helpers reproduce that.
 */

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' })
// Printable ASCII plus tab and LF: every code unit is its own grapheme.
const SIMPLE = /^[\t\n\x20-\x7e]*$/

/** The grapheme clusters of `s`, as `string:to_graphemes/1` splits it. */
export function graphemes (s: string): string[] {
  if (SIMPLE.test(s)) return s.split('')
  const out: string[] = []
  for (const seg of segmenter.segment(s)) out.push(seg.segment)
  return out
}

/** Number of grapheme clusters in `s` (`string:length/1`). */
export function graphemeLength (s: string): number {
  if (SIMPLE.test(s)) return s.length
  let n = 0
  for (const _ of segmenter.segment(s)) n++
  return n
}

/**
 * Index of `p` in `s` at or after `from` where the match does not cut a `"\r\n"` cluster,
 * or -1. (A full grapheme check would also refuse cutting combining marks; CRLF is the case
 * that matters for machine text.)
 */
export function findAligned (s: string, p: string, from = 0): number {
  let i = s.indexOf(p, from)
  while (i !== -1 && !aligned(s, i, i + p.length)) i = s.indexOf(p, i + 1)
  return i
}

/** Like {@link findAligned} but the last such index at or before `from`. */
export function findLastAligned (s: string, p: string, from = s.length): number {
  let i = s.lastIndexOf(p, from)
  while (i !== -1 && !aligned(s, i, i + p.length)) i = i === 0 ? -1 : s.lastIndexOf(p, i - 1)
  return i
}

function aligned (s: string, start: number, end: number): boolean {
  if (start > 0 && s.charCodeAt(start) === 10 && s.charCodeAt(start - 1) === 13) return false
  if (end < s.length && s.charCodeAt(end) === 10 && s.charCodeAt(end - 1) === 13) return false
  return true
}

/** All aligned occurrences of a non-empty `p` in `s`, left to right, not overlapping. */
export function splitAll (s: string, p: string): string[] {
  if (p === '') return [s]
  const parts: string[] = []
  let from = 0
  for (let i = findAligned(s, p); i !== -1; i = findAligned(s, p, from)) {
    parts.push(s.slice(from, i))
    from = i + p.length
  }
  parts.push(s.slice(from))
  return parts
}

/** Erlang's default whitespace for `string:trim/1,2` (with `"\r\n"` and U+0085, U+200E ...). */
export const TRIM_LEADING = /^[\t\n\v\f\r \u0085\u200e\u200f\u2028\u2029]+/
export const TRIM_TRAILING = /[\t\n\v\f\r \u0085\u200e\u200f\u2028\u2029]+$/
