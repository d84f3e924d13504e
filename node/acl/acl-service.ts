/**
 * The node's ACL service: loads `acl_file` at start, installs itself as the broker's
 * {@link AccessControl}, caches decisions per client, and serves `starling-ctl acl reload`.
 */
import type { StarlingNode } from '../node.js'
import type { AccessClient, AccessControl } from '../mqtt/broker.js'
import { resolvePath } from '../config/index.js'
import { defineCommand, type CtlCommand } from '../control/commands.js'
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
export type AclServiceComponents = Pick<StarlingNode, 'config' | 'logger' | 'broker' | 'hooks' | 'control'>

/** Result of the node's `acl reload` control command. */
export interface AclReloadResult {
  /** Number of rules now in force. */
  rules: number
}

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
}

/** Creates the ACL service of a node (nothing happens until `start`). */
export function createAclService (node: AclServiceComponents): AclService {
  const logger = node.logger.child({ component: 'acl' })
  let ruleSet: AclRuleSet = createAclRuleSet([], node.config.acl_nomatch)
  let cache: AclCache | null = null
  let offDisconnected: (() => void) | null = null
  let started = false
  let clock = Date.now()
  let clockTimer: NodeJS.Timeout | null = null
  const now = (): number => clock

  const acl: AccessControl = {
    // Called for every publish and subscribe: a cache hit allocates nothing.
    check (client: AccessClient, action: AclAction, topic: string) {
      const c = cache
      if (c !== null) {
        const hit = c.get(client, action, topic)
        if (hit !== undefined) return hit
      }
      const decision = ruleSet.decide(client, action, topic)
      if (c !== null) c.set(client, action, topic, decision)
      return decision
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
      node.broker.acl = acl
      started = true
    },

    async stop () {
      if (!started) return
      started = false
      if (node.broker.acl === acl) {
        node.broker.acl = null
        node.broker.aclDenyAction = 'ignore'
      }
      offDisconnected?.()
      offDisconnected = null
      if (clockTimer !== null) clearInterval(clockTimer)
      clockTimer = null
      node.control.unregister('acl reload')
      cache = null
    }
  }
}

/**
 * `acl reload`: EMQ X's `emqx_ctl acl reload` ("reload etc/acl.conf"). Prints `ok` and the
 * number of rules now in force; a bad file prints the file, line and problem and exits 1.
 */
export const aclReloadCommand = defineCommand<AclReloadResult>({
  words: ['acl', 'reload'],
  description: 'Reload the ACL file (acl_file) and empty every client\'s ACL cache',
  render (result) {
    return `ok\nrules: ${result.rules}\n`
  }
})

/** The `starling-ctl` commands of the ACL, for the command table. */
export const ACL_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [aclReloadCommand]
