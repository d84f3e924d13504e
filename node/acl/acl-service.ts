/**
 * The node's ACL service: loads `acl_file` at start, installs itself as the broker's
 * {@link AccessControl}, caches decisions per client, and serves `starling-ctl acl reload`.
 *
 * The ACL is a chain, as EMQ X 4's `client.check_acl` hook: the sources the auth backends
 * add ({@link AclService.addSource}) and the file's rules (priority -1, EMQ X's
 * emqx_mod_acl_internal) are asked from the highest priority down; the first `allow` or
 * `deny` decides, and when every source ignores the request `acl_nomatch` does. A
 * superuser (said so by the authenticator that let it in) is allowed everything. Decisions
 * are cached per client (`enable_acl_cache`), whichever source made them, and counted in
 * `client.acl.allow` / `client.acl.deny`.
 *
 * Hot path: a cache hit or a chain of synchronous sources answers synchronously, without
 * allocating; only a source that asks a server makes the answer a Promise.
 */
import type { StarlingNode } from '../node.js'
import type { AccessClient, AccessControl, AccessDecision } from '../mqtt/broker-types.js'
import { resolvePath } from '../config/index.js'
import type { AclReloadResult } from './acl-ctl.js'
import { loadAclFile, type AclRule } from './acl-rules.js'
import { createAclRuleSet, type AclAction, type AclRuleSet } from './acl-matcher.js'
import { AclCache } from './acl-cache.js'

/**
 * Resolution of the clock the cache reads (ms): an entry lives `acl_cache_ttl` to within
 * this. `Date.now()` costs more than a whole cache hit, so the service keeps the time in a
 * variable refreshed by a timer.
 */
const CACHE_CLOCK_MS = 100

/** What the ACL service uses of a node. */
export type AclServiceComponents = Pick<StarlingNode, 'config' | 'logger' | 'broker' | 'hooks' | 'control' | 'metrics'>

/** A source's answer: `ignore` passes the request to the next source. */
export type AclVerdict = 'allow' | 'deny' | 'ignore'

/** One source of ACL decisions in the chain (an auth backend's ACL query). */
export interface AclSource {
  /** The plugin's name, e.g. `svc_auth_mysql`. */
  name: string
  /** Higher runs first; equal priorities in the order added. The file's rules are at {@link FILE_ACL_PRIORITY}. */
  priority: number
  check: (client: AccessClient, action: AclAction, topic: string) => AclVerdict | Promise<AclVerdict>
}

/** Where the rules of `acl_file` sit in the chain: after the backends at their default 0 (EMQ X hooked its internal ACL at -1). */
export const FILE_ACL_PRIORITY = -1

/** The ACL of one node. */
export interface AclService {
  /**
   * Loads `acl_file` and installs the ACL on the broker (with `acl_deny_action`), listens
   * for disconnects to drop cache entries and registers the `acl reload` control command.
   * Rejects with an `AclFileError` naming the file and line when the file is unusable.
   */
  start: () => Promise<void>
  /** Removes the ACL from the broker (everything is allowed again) and the control command. */
  stop: () => Promise<void>
  /**
   * Reads `acl_file` again (and `acl_nomatch` and the cache settings from the config) and
   * empties every client's cache. On an error, throws it and keeps the rules in force.
   */
  reload: () => void
  /** The access control the broker calls; before `start` it has no rules and decides `acl_nomatch`. */
  readonly acl: AccessControl
  /** The rules in force, in file order. */
  readonly rules: readonly AclRule[]
  /** The decision cache; null when `enable_acl_cache` is off. */
  readonly cache: AclCache | null
  /**
   * Adds `source` to the chain (replacing one of the same name) and empties the cache;
   * returns the function that removes it (and empties the cache again).
   */
  addSource: (source: AclSource) => () => void
  /** Empties every client's cached decisions (a backend's ACL data changed). */
  clearCache: () => void
}

/** Creates the ACL service of a node (nothing happens until `start`). */
export function createAclService (node: AclServiceComponents): AclService {
  const logger = node.logger.child({ component: 'acl' })
  let ruleSet: AclRuleSet = createAclRuleSet([], node.config.acl_nomatch)
  let cache: AclCache | null = null
  let offDisconnected: (() => void) | null = null
  let offBroker: (() => void) | null = null
  let started = false
  let clock = Date.now()
  let clockTimer: NodeJS.Timeout | null = null
  const now = (): number => clock

  const fileSource: AclSource = {
    name: 'acl_file',
    priority: FILE_ACL_PRIORITY,
    check: (client, action, topic) => ruleSet.matchingRule(client, action, topic)?.permission ?? 'ignore'
  }
  /** The chain, highest priority first (stable for equal ones). */
  let sources: readonly AclSource[] = [fileSource]
  const metrics = node.metrics

  /** Records and counts a decision the chain made. */
  function decided (client: AccessClient, action: AclAction, topic: string, decision: AccessDecision, c: AclCache | null): AccessDecision {
    if (c !== null) c.set(client, action, topic, decision)
    if (decision === 'allow') metrics['client.acl.allow']++
    else metrics['client.acl.deny']++
    return decision
  }

  /** The chain from source `from` on, once a source answered with a Promise. */
  async function chainAsync (client: AccessClient, action: AclAction, topic: string, from: number, pending: Promise<AclVerdict>, c: AclCache | null): Promise<AccessDecision> {
    const list = sources
    let verdict = await settle(pending, list[from])
    for (let i = from + 1; verdict === 'ignore' && i < list.length; i++) {
      verdict = await settle(list[i].check(client, action, topic), list[i])
    }
    return decided(client, action, topic, verdict === 'ignore' ? ruleSet.nomatch : verdict, c)
  }

  /** A source's answer; a source that fails is logged and ignored (the chain goes on). */
  async function settle (answer: AclVerdict | Promise<AclVerdict>, source: AclSource): Promise<AclVerdict> {
    try {
      return await answer
    } catch (err) {
      logger.warn({ err, source: source.name }, 'an ACL source failed; ignored')
      return 'ignore'
    }
  }

  const acl: AccessControl = {
    // Called for every publish and subscribe: a cache hit allocates nothing.
    check (client: AccessClient, action: AclAction, topic: string) {
      if (client.superuser === true) {
        metrics['client.acl.allow']++
        return 'allow'
      }
      const c = cache
      if (c !== null) {
        const hit = c.get(client, action, topic)
        if (hit !== undefined) {
          if (hit === 'allow') metrics['client.acl.allow']++
          else metrics['client.acl.deny']++
          return hit
        }
      }
      const list = sources
      for (let i = 0; i < list.length; i++) {
        let answer: AclVerdict | Promise<AclVerdict>
        try {
          answer = list[i].check(client, action, topic)
        } catch (err) {
          logger.warn({ err, source: list[i].name }, 'an ACL source failed; ignored')
          continue
        }
        if (answer === 'ignore') continue
        if (answer === 'allow' || answer === 'deny') return decided(client, action, topic, answer, c)
        return chainAsync(client, action, topic, i, answer, c)
      }
      return decided(client, action, topic, ruleSet.nomatch, c)
    }
  }

  function addSource (source: AclSource): () => void {
    const rest = sources.filter(s => s.name !== source.name)
    const i = rest.findIndex(s => s.priority < source.priority)
    sources = i === -1 ? [...rest, source] : [...rest.slice(0, i), source, ...rest.slice(i)]
    cache?.clear()
    return () => {
      if (!sources.includes(source)) return
      sources = sources.filter(s => s !== source)
      cache?.clear()
    }
  }

  /** Loads the file and settings; assigns nothing until everything has been read. */
  function load (): void {
    const file = resolvePath(node.config, 'acl_file')
    const rules = loadAclFile(file)
    const cfg = node.config
    ruleSet = createAclRuleSet(rules, cfg.acl_nomatch)
    cache = cfg.enable_acl_cache ? new AclCache({ maxSize: cfg.acl_cache_max_size, ttlMs: cfg.acl_cache_ttl, now }) : null
    node.broker.aclDenyAction = cfg.acl_deny_action
    logger.info({ file, rules: rules.length, nomatch: cfg.acl_nomatch, cache: cfg.enable_acl_cache }, 'ACL loaded')
  }

  function reload (): void {
    try {
      load()
    } catch (err) {
      logger.warn({ err }, 'ACL reload failed; the rules in force are unchanged')
      throw err
    }
  }

  return {
    acl,
    reload,
    get rules () { return ruleSet.rules },
    get cache () { return cache },
    addSource,
    clearCache: () => { cache?.clear() },

    async start () {
      if (started) return
      load()
      // first the steps that can fail (a bad file, a command name taken), then the installs
      node.control.register('acl reload', (): AclReloadResult => {
        reload()
        return { rules: ruleSet.rules.length }
      })
      clock = Date.now()
      clockTimer = setInterval(() => { clock = Date.now() }, CACHE_CLOCK_MS)
      clockTimer.unref()
      offDisconnected = node.hooks.on('client.disconnected', (e) => { cache?.drop(e.client_id) })
      offBroker = node.broker.useAccessControl(acl)
      started = true
    },

    async stop () {
      if (!started) return
      started = false
      offBroker?.()
      offBroker = null
      node.broker.aclDenyAction = 'ignore'
      offDisconnected?.()
      offDisconnected = null
      if (clockTimer !== null) clearInterval(clockTimer)
      clockTimer = null
      node.control.unregister('acl reload')
      cache = null
    }
  }
}
