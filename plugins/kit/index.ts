/**
 * What several plugins share, in one place the dependency rules allow every plugin to import
 * (docs/architecture.md, "Where a new part goes"); it imports no plugin:
 * - `pools/`: connection pools for the real servers (MySQL, PostgreSQL, Redis, MongoDB, LDAP)
 *   and the TLS options builder their `ssl` keys share (docs/auth.md);
 * - `replayq/`: the replay queue, a memory or disk buffer of messages acknowledged only once
 *   sent (docs/replayq.md), under the bridges and, next, the data-integration backends;
 * - `parts.ts`: `PluginParts`, what a plugin is given to extend the rule engine and the API,
 *   and `StarlingPlugin`, the type every plugin exports.
 */
export type { PluginParts, StarlingPlugin } from './parts.js'
