/**
 * The one error the configuration subsystem throws. It lives here until the node's error
 * catalogue (`node/errors.ts`) exists; its name `ConfigError` is stable either way.
 */

/** Where a ConfigError's value came from, for its fields. */
export interface ConfigErrorInit {
  /** `etc/starling.conf:12`, `environment STARLING_X`, `override` or a file path. */
  readonly source: string
  /** The key as written (for a malformed line or a missing file: undefined). */
  readonly key?: string
  /** The value as written. */
  readonly value?: string
  /**
   * What would have been accepted, in words (`a size such as 1MB, 64KB or 1048576`);
   * for an unknown key, the closest known key if there is one.
   */
  readonly allowed?: string
}

/**
 * A configuration file, environment variable or override that cannot be used. Thrown at
 * start-up, it stops the node. The message is one line that names the source, the key,
 * the value and what is allowed, so it can be printed as is:
 *
 * `etc/starling.conf:12: bad value "abc" for mqtt.max_packet_size: expected a size such as 1MB, 64KB or 1048576`
 */
export class ConfigError extends Error {
  /** Stable machine-readable code, for the error catalogue. */
  readonly code = 'STARLING_CONFIG_INVALID'
  readonly source: string
  readonly key: string | undefined
  readonly value: string | undefined
  readonly allowed: string | undefined

  /** `detail` is the message after the `source: ` prefix; it must be a single line. */
  constructor (detail: string, init: ConfigErrorInit) {
    super(`${init.source}: ${detail}`.replace(/[\r\n]+/g, ' '))
    this.name = 'ConfigError'
    this.source = init.source
    this.key = init.key
    this.value = init.value
    this.allowed = init.allowed
  }

  /**
   * Every problem of one start, so that a file with several bad keys is mended in one go:
   * one problem is thrown as it is; several as one error whose message says how many and
   * lists each on a line of its own (`problems` holds them).
   */
  static all (problems: readonly ConfigError[]): ConfigError {
    if (problems.length === 1) return problems[0]
    const first = problems[0]
    const err = new ConfigError(`${problems.length} problems in the configuration`, { source: first.source, key: first.key, value: first.value, allowed: first.allowed })
    err.problems = problems
    err.message = [`${problems.length} problems in the configuration (each is one line below):`, ...problems.map((p) => `  ${p.message}`)].join('\n')
    return err
  }

  /** With {@link ConfigError.all}: every problem found (else just this one). */
  problems: readonly ConfigError[] = [this]

  /** A value that its key's type refuses. */
  static badValue (key: string, value: string, allowed: string, source: string): ConfigError {
    return new ConfigError(`bad value ${JSON.stringify(value)} for ${key}: expected ${allowed}`,
      { key, value, allowed, source })
  }

  /**
   * A key the schema does not know. `known` are the keys to suggest from; `render`
   * writes a suggestion the way the user should type it (an env var name, say).
   */
  static unknownKey (key: string, value: string, source: string, known: Iterable<string>,
    render: (key: string) => string = (k) => k): ConfigError {
    const near = closestKey(key, known)
    const hint = near === undefined
      ? '; docs/configuration.md lists the known keys'
      : ` (did you mean ${render(near)}?)`
    return new ConfigError(`unknown key ${JSON.stringify(key)}${hint}`,
      { key, value, allowed: near, source })
  }
}

/**
 * The known key nearest to a mistyped one: by edit distance (a swap of two neighbouring
 * letters counts as one edit), or the only known key that ends with what was typed
 * (`max_packet_size` -> `mqtt.max_packet_size`). Undefined when nothing is close.
 */
export function closestKey (typed: string, known: Iterable<string>): string | undefined {
  const keys = [...known]
  const suffixMatches = keys.filter((k) => k.endsWith(`.${typed}`))
  if (suffixMatches.length === 1) return suffixMatches[0]
  const limit = Math.max(2, Math.floor(typed.length / 5))
  let best: string | undefined
  let bestDistance = Infinity
  for (const k of keys) {
    if (Math.abs(k.length - typed.length) > limit) continue
    const d = editDistance(typed, k)
    if (d < bestDistance) {
      best = k
      bestDistance = d
    }
  }
  return bestDistance <= limit ? best : undefined
}

/** Optimal-string-alignment distance: insertions, deletions, substitutions, adjacent swaps. */
export function editDistance (a: string, b: string): number {
  const rows = a.length + 1
  const cols = b.length + 1
  const d: number[][] = Array.from({ length: rows }, (_, i) => {
    const row = new Array<number>(cols).fill(0)
    row[0] = i
    return row
  })
  for (let j = 0; j < cols; j++) d[0][j] = j
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1)
      }
    }
  }
  return d[rows - 1][cols - 1]
}
