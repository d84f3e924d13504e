/**
 * The warning lines a configuration load leaves, one per EMQ X key accepted without effect
 * (docs/migration.md), kept beside the loaded object so that whoever starts with it logs them.
 */

/** One key accepted without effect: logged as one line at start. */
export interface ConfigWarning {
  readonly key: string
  readonly source: string
  /** `<source>: <what and why>`, one line. */
  readonly message: string
}

const warningsOf = new WeakMap<object, readonly ConfigWarning[]>()

/** Records the warnings loading `cfg` gave (see {@link configWarnings}). */
export function recordWarnings (cfg: object, warnings: readonly ConfigWarning[]): void {
  warningsOf.set(cfg, Object.freeze([...warnings]))
}

/**
 * The warning lines loading `cfg` (the node's configuration, or a plugin's) gave, one per
 * EMQ X key accepted without effect (`etc/emqx.conf:31: node.process_limit has no meaning
 * outside the Erlang VM ...`). The node logs each at start, a plugin's when it loads.
 */
export function configWarnings (cfg: object): readonly ConfigWarning[] {
  return warningsOf.get(cfg) ?? []
}

