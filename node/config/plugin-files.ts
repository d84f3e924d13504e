/**
 * EMQ X 4's files of plugins Starling does not have, dropped into `etc/plugins/` with the
 * others (`emqx_coap.conf`, `emqx_prometheus.conf` ...): no plugin reads them, so each of their
 * keys is named in one warning line at start rather than silently left unread.
 */
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { readConfFile } from './conf-parser.js'
import type { ConfigWarning } from './config-warnings.js'
import { clipValue, emqxOutcome } from './emqx-keys.js'

/**
 * One warning per key of each `emqx_<x>.conf` in `dir` whose plugin `svc_<x>` is not among
 * `known` (the node's plugin names). A file that cannot be parsed gives one warning saying so.
 */
export function foreignPluginFileWarnings (dir: string, known: ReadonlySet<string>): ConfigWarning[] {
  if (!existsSync(dir)) return []
  const warnings: ConfigWarning[] = []
  for (const name of readdirSync(dir).sort()) {
    const m = /^emqx_([a-z0-9_]+)\.conf$/.exec(name)
    if (m === null || known.has(`svc_${m[1]}`)) continue
    const path = join(dir, name)
    let entries
    try {
      entries = readConfFile({ path, cwd: dir, required: true })
    } catch (err) {
      warnings.push({ key: '', source: path, message: `${path}: not read (${(err as Error).message}): emqx_${m[1]} is a plugin Starling does not have (yet)` })
      continue
    }
    for (const e of entries) {
      const outcome = emqxOutcome(e.key, e.value)
      const text = outcome?.kind === 'warn' && outcome.why === 'plugin'
        ? outcome.text
        : `${e.key} = ${clipValue(e.value)} belongs to emqx_${m[1]}, which Starling does not have (yet); accepted without effect`
      warnings.push({ key: e.key, source: `${path}:${e.line}`, message: `${path}:${e.line}: ${text}` })
    }
  }
  return warnings
}
