/**
 * Server addresses in EMQ X's `server` form (`host:port`, or a comma-separated list), read
 * when a plugin's configuration is checked. Apart from the drivers on purpose: a plugin
 * checks its keys at load without loading its driver, which it imports only when it opens a
 * connection (an idle node loads no database driver).
 */

/** One server address. */
export interface RedisAddress {
  host: string
  port: number
}

/**
 * Parses EMQ X's `server` value: `host:port` or a comma-separated list of them (spaces
 * allowed); the port defaults to `defaultPort`. Throws an Error with a readable reason.
 */
export function parseRedisServers (value: string, defaultPort = 6379): RedisAddress[] {
  const items = value.split(',').map((s) => s.trim()).filter((s) => s !== '')
  if (items.length === 0) throw new Error('no server given')
  return items.map((item) => {
    const m = /^(?:\[([^\]]+)\]|([^:\s]+))(?::(\d{1,5}))?$/.exec(item)
    const port = m?.[3] === undefined ? defaultPort : Number(m[3])
    if (m === null || port < 1 || port > 65535) throw new Error(`bad server ${JSON.stringify(item)}: expected host:port`)
    return { host: m[1] ?? m[2], port }
  })
}
