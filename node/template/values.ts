/**
 * `${key}` placeholders of action parameters (spec: "Rule engine actions used with
 * resources": placeholders are replaced with selected values before execution). A key may be
 * a nested path (`${payload.x}`, `${a.b.c}`); a JSON string on the way is decoded, as EMQ X 4
 * read `${payload.x}` from a JSON payload.
 *
 * Rendering: strings as they are, numbers and booleans as text, objects and arrays as JSON,
 * an absent value as the empty string.
 */

const PLACEHOLDER = /\$\{([^}]*)\}/g

/** The value at `path` (dot separated) in `data`, or undefined. */
export function lookup (data: Record<string, unknown>, path: string): unknown {
  const key = path.trim()
  if (key in data) return data[key]
  let value: unknown = data
  for (const part of key.split('.')) {
    if (typeof value === 'string') value = parseJson(value)
    if (typeof value !== 'object' || value === null) return undefined
    value = (value as Record<string, unknown>)[part]
  }
  return value
}

function parseJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** A value as a placeholder renders it. */
export function renderValue (value: unknown): string {
  if (value === undefined || value === null) return ''
  if (typeof value === 'string') return value
  if (Buffer.isBuffer(value)) return value.toString('utf8')
  if (typeof value === 'object') return JSON.stringify(value)
  return String(value)
}

/** Whether `text` holds a placeholder. */
export function hasPlaceholder (text: string): boolean {
  return text.includes('${')
}

/**
 * `text` with every `${key}` replaced by the rendered value from `data`, passed through
 * `encode` when given (a URL path's `encodeURIComponent`: a value never adds path segments).
 */
export function fillString (text: string, data: Record<string, unknown>, encode?: (rendered: string) => string): string {
  if (!hasPlaceholder(text)) return text
  if (encode !== undefined) return text.replace(PLACEHOLDER, (_m, key: string) => encode(renderValue(lookup(data, key))))
  return text.replace(PLACEHOLDER, (_m, key: string) => renderValue(lookup(data, key)))
}

/**
 * A text's placeholders found once ({@link compileText}), for a text filled once per message:
 * `pieces` are the literal parts around `keys` (one more piece than keys), `whole` the key
 * when the text is exactly one placeholder.
 */
export interface TextTemplate {
  readonly text: string
  readonly pieces: readonly string[]
  readonly keys: readonly string[]
  readonly whole: string | undefined
}

/** `text` split at its placeholders (see {@link TextTemplate}). */
export function compileText (text: string): TextTemplate {
  const pieces: string[] = []
  const keys: string[] = []
  let last = 0
  for (const m of text.matchAll(PLACEHOLDER)) {
    pieces.push(text.slice(last, m.index))
    keys.push(m[1].trim())
    last = m.index + m[0].length
  }
  pieces.push(text.slice(last))
  const whole = keys.length === 1 && pieces[0] === '' && pieces[1] === '' ? keys[0] : undefined
  return { text, pieces, keys, whole }
}

/** {@link fillString} of a compiled text: the same result, without a scan or a callback per message. */
export function renderText (t: TextTemplate, data: Record<string, unknown>): string {
  const keys = t.keys
  if (keys.length === 0) return t.text
  let out = t.pieces[0]
  for (let i = 0; i < keys.length; i++) out += renderValue(lookup(data, keys[i])) + t.pieces[i + 1]
  return out
}

/** {@link fillTemplate} of a compiled text: a text that is exactly one placeholder keeps the value's type (null when absent). */
export function fillText (t: TextTemplate, data: Record<string, unknown>): unknown {
  return t.whole !== undefined ? lookup(data, t.whole) ?? null : renderText(t, data)
}

/**
 * A template value (object, array, string) filled from `data`: a string that is exactly one
 * placeholder keeps the value's type (`"${qos}"` gives the number), other strings are filled
 * as text, objects and arrays recursively, other values unchanged.
 */
export function fillTemplate (template: unknown, data: Record<string, unknown>): unknown {
  if (typeof template === 'string') {
    const whole = /^\$\{([^}]*)\}$/.exec(template)
    if (whole !== null) return lookup(data, whole[1]) ?? null
    return fillString(template, data)
  }
  if (Array.isArray(template)) return template.map(t => fillTemplate(t, data))
  if (typeof template === 'object' && template !== null) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(template)) out[fillString(k, data)] = fillTemplate(v, data)
    return out
  }
  return template
}
