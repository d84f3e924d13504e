/**
 * `regex_match/2` and `regex_replace/3` (EMQ X: `re:run/3`, `re:replace/4`, PCRE). Patterns
 * are compiled as JavaScript regular expressions, which share PCRE's common syntax (classes,
 * groups, anchors, quantifiers, lookahead); PCRE-only constructs (possessive quantifiers,
 * `(?i)` inline flags, `\A`, `\Z`) fail as invalid patterns. Compiled patterns are cached, since
 * rules pass the same literal pattern on every message.
 */
import { ConversionError } from './errors.js'
import { textOf } from './value-model.js'

const CACHE_MAX = 256
const cache = new Map<string, RegExp>()

function compile (fn: string, pattern: string): RegExp {
  let re = cache.get(pattern)
  if (re !== undefined) return re
  try {
    re = new RegExp(pattern, 'g')
  } catch (err) {
    throw new ConversionError(fn, 'badarg', `invalid regular expression ${JSON.stringify(pattern)}: ${(err as Error).message}`)
  }
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string)
  cache.set(pattern, re)
  return re
}

/** `regex_match(Str, RE)`: true when RE matches anywhere in Str. */
export function regexMatch (str: unknown, pattern: unknown): boolean {
  const re = compile('regex_match', textOf('regex_match', pattern))
  re.lastIndex = 0
  const found = re.test(textOf('regex_match', str))
  re.lastIndex = 0
  return found
}

type Part = string | number

/**
 * Erlang's replacement syntax: `&` is the whole match, `\N`, `\gN` and `\g{N}` group N (nothing
 * when the group did not take part), `\&` and `\\` a literal `&` and `\`.
 */
function parseReplacement (rep: string): Part[] {
  const parts: Part[] = []
  let lit = ''
  for (let i = 0; i < rep.length; i++) {
    const c = rep[i]
    if (c === '&') {
      parts.push(lit, 0)
      lit = ''
    } else if (c === '\\' && i + 1 < rep.length) {
      const rest = rep.slice(i + 1)
      const m = /^(?:(\d+)|g(\d+)|g\{(\d+)\})/.exec(rest)
      if (m !== null) {
        parts.push(lit, Number(m[1] ?? m[2] ?? m[3]))
        lit = ''
        i += m[0].length
      } else {
        lit += rest[0]
        i++
      }
    } else lit += c
  }
  parts.push(lit)
  return parts.filter((p) => p !== '')
}

/** `regex_replace(Src, RE, Rep)`: every match of RE in Src replaced by Rep. */
export function regexReplace (src: unknown, pattern: unknown, rep: unknown): string {
  const re = compile('regex_replace', textOf('regex_replace', pattern))
  const parts = parseReplacement(textOf('regex_replace', rep))
  re.lastIndex = 0
  const out = textOf('regex_replace', src).replace(re, (...m: unknown[]) => {
    // m is [match, group1..groupN, offset, input(, namedGroups)]
    const n = m.length - (typeof m[m.length - 1] === 'object' ? 3 : 2)
    let s = ''
    for (const p of parts) s += typeof p === 'string' ? p : p < n ? ((m[p] as string | undefined) ?? '') : ''
    return s
  })
  re.lastIndex = 0
  return out
}
