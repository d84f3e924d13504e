/**
 * Parsers and formatters for the value syntaxes of `etc/starling.conf` and the plugin
 * files: durations, byte sizes, booleans, numbers and listen addresses. They follow EMQ X
 * 4's cuttlefish datatypes (`{duration, ms}`, `bytesize`, `flag`, `ip`) with the
 * differences written beside each parser. Every parser returns `undefined` for text it
 * does not accept; the caller turns that into a `ConfigError` naming the key.
 */
import { isIPv4, isIPv6 } from 'node:net'

/** A listen address as written in the config: `ip:port`, `[v6]:port` or a bare `port`. */
export interface ListenerAddress {
  /** Host or IP to bind; IPv6 without brackets (`::`), as `net.Server.listen` takes it. */
  readonly host: string
  /** TCP port, 0 to 65535; 0 asks the OS for an ephemeral port. */
  readonly port: number
  /** Canonical text: `0.0.0.0:1883`, `[::]:1883`; a bare port is written with `0.0.0.0`. */
  readonly text: string
}

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
const WEEK = 7 * DAY

/** `flapping_detect_policy`: `<count>, <window>, <ban time>` such as `30, 1m, 5m` (node/flapping/). */
export const FLAPPING_POLICY_PATTERN = /^\s*[1-9]\d*\s*,\s*(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w)?)+\s*,\s*(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w)?)+\s*$/i

/**
 * `zone.external.rate_limit.conn_messages_in` (`<count>,<period>` such as `100,10s`) and
 * `conn_bytes_in` (`<size>,<period>` such as `100KB,10s`); empty is off (node/mqtt/read-gate.ts).
 */
export const RATE_PATTERN = /^\s*(?:\d+(?:\.\d+)?(?:KB|MB|GB)?)\s*,\s*(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w)?)+\s*$/i

/**
 * Parses a connection rate limit (see {@link RATE_PATTERN}); `undefined` for other text,
 * null for empty (off). `sized` accepts byte units on the count (`100KB`).
 */
export function parseRate (text: string, sized: boolean): { count: number, periodMs: number } | null | undefined {
  if (text.trim() === '') return null
  const comma = text.indexOf(',')
  if (comma < 0) return undefined
  const countText = text.slice(0, comma).trim()
  const count = sized ? parseSize(countText) : parseInteger(countText)
  const periodMs = parseDuration(text.slice(comma + 1).trim())
  if (count === undefined || periodMs === undefined || count <= 0 || periodMs <= 0) return undefined
  return { count, periodMs }
}

/** `zone.external.force_shutdown_policy`: `<max queue length>|<max size>` such as `10000|64MB`; empty is off (node/mqtt/wire.ts). */
export const FORCE_SHUTDOWN_PATTERN = /^\s*\d+\s*\|\s*\d+(?:\.\d+)?(?:KB|MB|GB)?\s*$/i

/** Parses `zone.external.force_shutdown_policy`; null for empty (off), `undefined` for other text. */
export function parseForceShutdown (text: string): { maxQueue: number, maxBytes: number } | null | undefined {
  if (text.trim() === '') return null
  const bar = text.indexOf('|')
  if (bar < 0) return undefined
  const maxQueue = parseInteger(text.slice(0, bar))
  const maxBytes = parseSize(text.slice(bar + 1))
  if (maxQueue === undefined || maxBytes === undefined || maxQueue <= 0 || maxBytes <= 0) return undefined
  return { maxQueue, maxBytes }
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: SECOND, m: MINUTE, h: HOUR, d: DAY, w: WEEK }
const DURATION_TOKEN = /(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h|d|w)/y
const BARE_NUMBER = /^(?:\d+(?:\.\d+)?|\.\d+)$/

/**
 * Parses a duration into milliseconds (rounded to the nearest millisecond).
 *
 * Units `ms`, `s`, `m`, `h`, `d`, `w`, case-insensitive, decimals allowed (`1.5m`, `.5s`),
 * concatenated terms are summed (`1h30m`, `1m30s500ms`) as cuttlefish did. Unlike
 * cuttlefish, which refused a number without a unit, a bare number means seconds
 * (`30` = 30000): EMQ X 4 wrote several keys of this kind (`server_keepalive`) as
 * plain seconds. No spaces inside the value; no negative durations.
 */
export function parseDuration (text: string): number | undefined {
  const s = text.trim().toLowerCase()
  if (s === '') return undefined
  if (BARE_NUMBER.test(s)) return checkedInteger(Number(s) * SECOND)
  let total = 0
  DURATION_TOKEN.lastIndex = 0
  while (DURATION_TOKEN.lastIndex < s.length) {
    const m = DURATION_TOKEN.exec(s)
    if (m === null) return undefined
    total += Number(m[1]) * DURATION_UNITS[m[2]]
  }
  return checkedInteger(total)
}

/**
 * Writes milliseconds in the largest units that keep it exact, as cuttlefish did:
 * 90000 -> `1m30s`, 1500 -> `1s500ms`, 0 -> `0s`.
 */
export function formatDuration (ms: number): string {
  if (ms === 0) return '0s'
  let rest = ms
  let out = ''
  for (const [unit, size] of [['w', WEEK], ['d', DAY], ['h', HOUR], ['m', MINUTE], ['s', SECOND], ['ms', 1]] as const) {
    const n = Math.floor(rest / size)
    if (n > 0) {
      out += `${n}${unit}`
      rest -= n * size
    }
  }
  return out
}

const KB = 1024
const MB = 1024 * KB
const GB = 1024 * MB
const SIZE_UNITS: Record<string, number> = { '': 1, kb: KB, mb: MB, gb: GB }
const SIZE = /^(\d+(?:\.\d+)?|\.\d+)(kb|mb|gb)?$/

/**
 * Parses a byte size: `64KB`, `1MB`, `2GB` (powers of 1024, case-insensitive, decimals
 * allowed and rounded to a whole byte) or a bare number of bytes. As cuttlefish's
 * `bytesize`; there is no `B` or `TB` suffix.
 */
export function parseSize (text: string): number | undefined {
  const m = SIZE.exec(text.trim().toLowerCase())
  if (m === null) return undefined
  return checkedInteger(Number(m[1]) * SIZE_UNITS[m[2] ?? ''])
}

/** Writes bytes in the largest exact unit: 1048576 -> `1MB`, 65536 -> `64KB`, 1000 -> `1000`. */
export function formatSize (bytes: number): string {
  if (bytes === 0) return '0'
  if (bytes % GB === 0) return `${bytes / GB}GB`
  if (bytes % MB === 0) return `${bytes / MB}MB`
  if (bytes % KB === 0) return `${bytes / KB}KB`
  return String(bytes)
}

/** Parses `on`, `off`, `true`, `false` (case-insensitive), as cuttlefish's `flag`. */
export function parseBool (text: string): boolean | undefined {
  switch (text.trim().toLowerCase()) {
    case 'on':
    case 'true': return true
    case 'off':
    case 'false': return false
    default: return undefined
  }
}

/** Parses a decimal integer (optional sign, no unit), within the safe-integer range. */
export function parseInteger (text: string): number | undefined {
  const s = text.trim()
  if (!/^[-+]?\d+$/.test(s)) return undefined
  const n = Number(s)
  return Number.isSafeInteger(n) ? n : undefined
}

/** Parses a decimal number such as `0.75`, `1`, `.5` (no exponent, no unit). */
export function parseFloatValue (text: string): number | undefined {
  const s = text.trim()
  if (!/^[-+]?(?:\d+(?:\.\d*)?|\.\d+)$/.test(s)) return undefined
  const n = Number(s)
  return Number.isFinite(n) ? n : undefined
}

const HOSTNAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/

/**
 * Parses a listen address: `ip:port`, `[ipv6]:port`, `hostname:port` or a bare `port`
 * (meaning `0.0.0.0:port`). The port is 0 to 65535; 0 means an ephemeral port.
 * An IPv6 address must be in brackets, so `::1:1883` is refused rather than guessed at.
 */
export function parseAddress (text: string): ListenerAddress | undefined {
  const s = text.trim()
  let host: string
  let portText: string
  let m: RegExpExecArray | null
  if (/^\d+$/.test(s)) {
    host = '0.0.0.0'
    portText = s
  } else if ((m = /^\[([^\]]+)\]:(\d+)$/.exec(s)) !== null) {
    if (!isIPv6(m[1])) return undefined
    host = m[1]
    portText = m[2]
  } else if ((m = /^([^:[\]\s]+):(\d+)$/.exec(s)) !== null) {
    host = m[1]
    portText = m[2]
    // a dotted all-numeric host must be a real IPv4 address: `1.2.3:80` is a typo, not a name
    const looksNumeric = /^[\d.]+$/.test(host)
    if (looksNumeric ? !isIPv4(host) : !HOSTNAME.test(host)) return undefined
  } else {
    return undefined
  }
  const port = Number(portText)
  if (!Number.isInteger(port) || port < 0 || port > 65535 || portText.length > 5) return undefined
  const canonical = isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`
  return Object.freeze({ host, port, text: canonical })
}

const PERCENT = /^(\d+(?:\.\d+)?|\.\d+)%$/

/**
 * Parses a percentage as EMQ X 4 writes thresholds (`80%`, `2.5%`), 0% to 100%, into a
 * fraction (`80%` -> 0.8), as cuttlefish's `{percent, float}` did. The `%` is required:
 * a bare `0.8` or `80` is refused rather than guessed at.
 */
export function parsePercent (text: string): number | undefined {
  const m = PERCENT.exec(text.trim())
  if (m === null) return undefined
  const n = Number(m[1])
  return n <= 100 ? n / 100 : undefined
}

/** Writes a fraction as a percentage: 0.8 -> `80%`, 0.025 -> `2.5%` (at most 6 decimals). */
export function formatPercent (fraction: number): string {
  return `${Number((fraction * 100).toFixed(6))}%`
}

function checkedInteger (n: number): number | undefined {
  const r = Math.round(n)
  return Number.isSafeInteger(r) ? r : undefined
}
