/**
 * The node's settings through the API (`/api/v3/configs/`, `/nodes/:node/configs/`): node
 * operations `configs.get` and `configs.put`, and the service functions the handlers call.
 *
 * Node keys are the keys of `etc/starling.conf`, under the app name {@link NODE_APP}
 * (EMQ X grouped keys by Erlang application, `emqx` for the broker's). A change is made
 * in the running node only, as EMQ X 4 did: keys the node applies at run time
 * (config-live.ts) take effect at once and are answered in `applied`; the others are left
 * as they are and answered in `restart_required` (set them in `etc/starling.conf` and
 * restart). Invariants:
 * - every key and value is checked before anything changes; one bad one is 108 with the
 *   config error's message and nothing changes;
 * - `node.config` is always a complete, frozen, validated configuration: a change swaps it
 *   for a new one, and if applying fails the old one is put back and applied again.
 */
import { resolve } from 'node:path'
import type { StarlingNode } from '../node.js'
import type { ClusterList, NodeRpc } from '../rpc.js'
import { MissingParameterError, NotFoundError, WrongTypeError, toApiError } from '../errors.js'
import {
  ConfigError, configKeys, convertValue, describeConfig, isPluginKey, resolvePath, redactSecrets, isSecretKey, REDACTED,
  type ConfigKey, type ConfigPathKey, type ConfigSchema, type StarlingConfig
} from '../config/index.js'
import { CONFIG_SCHEMA } from '../config/schema.js'
import { LIVE_APPLIERS, isAppliedLive, type LiveApplier, type LiveComponents } from './config-live.js'

/** The app name of the node's own keys in `/configs/:app`. */
export const NODE_APP = 'starling'

const SCHEMA: ConfigSchema = CONFIG_SCHEMA
const KEYS: string[] = configKeys().map(k => k.key)

/** A node's settings as `GET /nodes/:node/configs/` answers them. */
export interface NodeConfigs {
  /** Every node key and its value in force, as config text (`mqtt.max_packet_size: 1MB`). */
  configs: Record<string, string>
  /** The keys a `PUT` applies at run time; every other key needs a restart. */
  live: string[]
}

/** What a `PUT` of node keys answers (per node). */
export interface ConfigChange {
  /** Keys now in force. */
  applied: string[]
  /** Keys left unchanged: set them in etc/starling.conf and restart the node. */
  restart_required: string[]
}

/**
 * What a change of the node's settings uses of the node: its configuration (replaced as a
 * whole), its logger, and what the live appliers use (config-live.ts).
 */
export type ConfigComponents = Pick<StarlingNode, 'config' | 'logger'> & LiveComponents

/** One node's answer to a cluster-wide `PUT /configs/:app`: its change, or its error. */
export type NodeConfigChange = ({ node: string } & ConfigChange) | { node: string, code: number, message: string }

/** Throws HTTP 404 (code 102) unless `app` is {@link NODE_APP}. */
export function checkApp (app: string): void {
  if (app !== NODE_APP) {
    throw NotFoundError.withMessage(`unknown app ${JSON.stringify(app)}: node keys are under ${NODE_APP} (PUT /api/v3/configs/${NODE_APP}); ` +
      'plugin settings are under /api/v3/nodes/:node/plugin_configs/:plugin')
  }
}

/**
 * Checks a change (key -> value text) against the node's schema and answers the typed
 * values; 107 when empty, 108 for an unknown key, a plugin's key or a bad value.
 */
export function parseConfigChange (values: Record<string, string>): Map<ConfigKey, unknown> {
  const entries = Object.entries(values)
  if (entries.length === 0) throw new MissingParameterError('missing parameter: give at least one key with its value')
  const parsed = new Map<ConfigKey, unknown>()
  for (const [key, text] of entries) {
    if (typeof text !== 'string') throw new WrongTypeError(`parameter ${key} must be text`)
    // a secret sent back as GET showed it: unchanged
    if (text === REDACTED && isSecretKey(SCHEMA, key)) continue
    if (!Object.hasOwn(SCHEMA, key)) {
      if (isPluginKey(key)) throw new WrongTypeError(`key ${JSON.stringify(key)} belongs to a plugin: use PUT /api/v3/nodes/:node/plugin_configs/:plugin`)
      throw new WrongTypeError(ConfigError.unknownKey(key, text, 'request', KEYS).message)
    }
    try {
      parsed.set(key as ConfigKey, convertValue(key, SCHEMA[key], text, 'request'))
    } catch (err) {
      throw new WrongTypeError((err as Error).message)
    }
  }
  return parsed
}

/** Applies a checked change to this node; see the module comment. */
async function changeConfig (node: ConfigComponents, values: Record<string, string>): Promise<ConfigChange> {
  const parsed = parseConfigChange(values)
  const applied = [...parsed.keys()].filter(isAppliedLive)
  const restartRequired = [...parsed.keys()].filter(k => !isAppliedLive(k))
  if (applied.length === 0) return { applied, restart_required: restartRequired }
  const current = node.config
  const next: Record<string, unknown> = { ...current }
  for (const key of Object.keys(SCHEMA) as ConfigKey[]) {
    // a path resolves against the directory the config was loaded from, which a new object forgets
    if (SCHEMA[key].type === 'path' && resolvePath(current, key as ConfigPathKey) !== resolve(current[key] as string)) {
      next[key] = resolvePath(current, key as ConfigPathKey)
    }
  }
  for (const key of applied) next[key] = parsed.get(key)
  const appliers = new Set<LiveApplier>(applied.map(k => LIVE_APPLIERS.get(k) as LiveApplier))
  setConfig(node, Object.freeze(next) as unknown as StarlingConfig)
  try {
    for (const apply of appliers) apply(node)
  } catch (err) {
    setConfig(node, current)
    for (const apply of appliers) {
      try { apply(node) } catch { /* the old config was in force before: it applies */ }
    }
    throw new WrongTypeError(`${(err as Error).message}; nothing was changed`)
  }
  node.logger.info({ applied, restart_required: restartRequired }, 'configuration changed through the API')
  return { applied, restart_required: restartRequired }
}

/** `node.config` is declared read-only for its readers; a change replaces the whole object. */
function setConfig (node: Pick<ConfigComponents, 'config'>, config: StarlingConfig): void {
  (node as { config: StarlingConfig }).config = config
}

function nodeConfigs (config: StarlingConfig): NodeConfigs {
  // secrets (node.cookie, the default application's secret) are never served back
  return { configs: redactSecrets(SCHEMA, describeConfig(config)), live: KEYS.filter(isAppliedLive) }
}

/** `GET /configs/`: every running node's settings, by node, and the nodes that failed. */
export async function listConfigs (rpc: NodeRpc): Promise<ClusterList<{ node: string } & NodeConfigs>> {
  const answers = await rpc.gather<NodeConfigs>('configs.get')
  return { items: answers.items.map(a => ({ node: a.node, ...a.result })), failed: answers.failed }
}

/** `GET /nodes/:node/configs/`. */
export async function getNodeConfigs (rpc: NodeRpc, node: string): Promise<NodeConfigs> {
  return await rpc.call<NodeConfigs>(node, 'configs.get')
}

/**
 * `PUT /configs/:app`: the change on every running node. It is checked here first, so a
 * bad one changes no node; a node that fails answers its code and message in its entry.
 */
export async function changeClusterConfig (rpc: NodeRpc, app: string, values: Record<string, string>): Promise<NodeConfigChange[]> {
  checkApp(app)
  parseConfigChange(values)
  const answers = await rpc.callAll<ConfigChange>('configs.put', { values })
  return answers.map((a): NodeConfigChange => {
    if (a.ok) return { node: a.node, ...a.result }
    const e = toApiError(a.error)
    return { node: a.node, code: e.code, message: e.message }
  })
}

/** `PUT /nodes/:node/configs/:app`: the change on `node`. */
export async function changeNodeConfig (rpc: NodeRpc, node: string, app: string, values: Record<string, string>): Promise<ConfigChange> {
  rpc.checkNode(node)
  checkApp(app)
  parseConfigChange(values)
  return await rpc.call<ConfigChange>(node, 'configs.put', { values })
}

/** Registers `configs.get` and `configs.put` on `node.rpc`. */
export function registerConfigOperations (node: StarlingNode): void {
  node.rpc.register('configs.get', () => nodeConfigs(node.config))
  node.rpc.register('configs.put', async (args: { values: Record<string, string> }) => await changeConfig(node, args.values))
}
