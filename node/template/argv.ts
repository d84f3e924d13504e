/**
 * Command templates split into arguments before any value goes in (a Redis command: the
 * auth backends' `HMGET mqtt_user:%u password`, the rule action's `HSET msgs:${clientid}
 * ${payload}`): split on whitespace, as EMQ X's `string:tokens(Cmd, " ")`, without quoting,
 * then each argument filled on its own, so a value (spaces and all) can never add or split
 * arguments.
 */

/** A command compiled into one template per argument (the first is the command's name). */
export interface ArgvTemplate<T> {
  readonly source: string
  readonly args: readonly T[]
}

/**
 * Splits `source` into words and compiles each with `compile`; undefined when it has no
 * word (the caller refuses it with its own error).
 */
export function compileArgv<T> (source: string, compile: (word: string) => T): ArgvTemplate<T> | undefined {
  const words = source.trim().split(/\s+/).filter((w) => w !== '')
  if (words.length === 0) return undefined
  return { source, args: words.map(compile) }
}

/** The argv: exactly as many arguments as the template has words, each rendered by `render`. */
export function renderArgv<T, V> (template: ArgvTemplate<T>, render: (arg: T) => V): V[] {
  return template.args.map(render)
}
