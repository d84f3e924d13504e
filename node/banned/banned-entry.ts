/**
 * The banned list's entry (spec: Resources, Banned entry) and the validation of what the
 * API and the CLI send, with the errors they get (kinds of the node's error catalogue,
 * `node/errors.ts`, which gives each its code and HTTP status).
 */
import { isIP } from 'node:net'
import { ApiError, ERRORS, type ErrorKind } from '../errors.js'
import { MAX_KEY_BYTES } from '../store/key-limit.js'

/** What `who` is matched against: the spec's names (EMQ X 3.x/4.0 used the same). */
export const BANNED_AS = ['client_id', 'username', 'ip_address'] as const

/** One of {@link BANNED_AS}. */
export type BannedAs = typeof BANNED_AS[number]

/** Other spellings accepted on input (EMQ X 4.x later names), stored as the spec's. */
const AS_ALIASES: Readonly<Record<string, BannedAs>> = { clientid: 'client_id', peerhost: 'ip_address' }

/** How long a ban lasts when `until` is not given, in seconds (EMQ X's 5 minutes). */
export const DEFAULT_BAN_SECONDS = 300

/** `until` above this is taken for milliseconds and refused (it is the year 5138 in seconds). */
const MAX_UNTIL = 1e11

/** `by` of an entry that does not say who banned (EMQ X 3.4 showed its unset field so). */
export const BANNED_BY_UNKNOWN = 'undefined'

/** `by` of the entries `starling-ctl banned add` makes. */
export const BANNED_BY_CTL = 'starling-ctl'

/** A banned entry as stored and returned (spec field names, plus EMQ X 3.4's `by`). */
export interface BannedEntry {
  who: string
  as: BannedAs
  reason: string
  desc: string
  /**
   * Who banned: the `by` the API request gave, else the API application that made it;
   * `starling-ctl` for the CLI; {@link BANNED_BY_UNKNOWN} for entries older than the field.
   */
  by: string
  /** When the ban ends, in whole seconds since the Unix epoch (EMQ X's unit). */
  until: number
}

/** What `add` takes: `who` and `as` are required, the rest optional (`until` may be a numeric string). */
export interface BannedInput {
  who?: unknown
  as?: unknown
  reason?: unknown
  desc?: unknown
  by?: unknown
  until?: unknown
}

/** `entry` with every field, in EMQ X's order (`by` filled in for entries stored before it existed). */
export function shownBanned (entry: Omit<BannedEntry, 'by'> & { by?: string }): BannedEntry {
  return { who: entry.who, as: entry.as, reason: entry.reason, desc: entry.desc, by: entry.by ?? BANNED_BY_UNKNOWN, until: entry.until }
}

/** Base class: every banned-list error is an API error of its catalogue kind. */
export class BannedError extends ApiError {
  constructor (kind: ErrorKind, message: string) {
    super(kind, message)
    this.name = kind.name
  }
}

/** A required field is missing or empty (spec code 107, request parameter missing). */
export class BannedParameterMissingError extends BannedError {
  constructor (field: string) {
    super(ERRORS.BannedParameterMissingError, `banned entry needs ${JSON.stringify(field)}${field === 'as' ? ` (one of ${BANNED_AS.join(', ')})` : ''}`)
  }
}

/** A field has a wrong type or value (spec code 108, request parameter of wrong type). */
export class BannedParameterInvalidError extends BannedError {
  constructor (message: string) {
    super(ERRORS.BannedParameterInvalidError, message)
  }
}

/** Deleting an entry that is not there (code 102, HTTP 404: the spec has no code for an unknown entry). */
export class BannedEntryNotFoundError extends BannedError {
  constructor (who: string, as: string) {
    super(ERRORS.BannedEntryNotFoundError, `no banned entry for ${as} ${JSON.stringify(who)}; \`starling-ctl banned list\` shows the entries`)
  }
}

/** The store key of an entry: `<as>:<who>` (`who` normalised). */
export function bannedKey (as: BannedAs, who: string): string {
  return `${as}:${who}`
}

/**
 * `as` in the spec's spelling; throws 107 when missing, 108 when not one of
 * {@link BANNED_AS} (or an alias: `clientid`, `peerhost`).
 */
export function parseBannedAs (as: unknown): BannedAs {
  if (as === undefined || as === null || as === '') throw new BannedParameterMissingError('as')
  if (typeof as === 'string') {
    if ((BANNED_AS as readonly string[]).includes(as)) return as as BannedAs
    if (Object.hasOwn(AS_ALIASES, as)) return AS_ALIASES[as]
  }
  throw new BannedParameterInvalidError(`"as" must be one of ${BANNED_AS.join(', ')}, not ${JSON.stringify(as)}`)
}

/**
 * `who` checked and normalised for `as`: an `ip_address` must be an IP address and is
 * kept in canonical form (IPv4-mapped IPv6 as IPv4, IPv6 in lower case).
 */
export function parseBannedWho (who: unknown, as: BannedAs): string {
  if (who === undefined || who === null || who === '') throw new BannedParameterMissingError('who')
  if (typeof who !== 'string') throw new BannedParameterInvalidError(`"who" must be a string, not ${JSON.stringify(who)}`)
  if (Buffer.byteLength(bannedKey(as, who)) > MAX_KEY_BYTES) {
    throw new BannedParameterInvalidError(`"who" is too long: at most ${MAX_KEY_BYTES - as.length - 1} bytes`)
  }
  if (as !== 'ip_address') return who
  const ip = normaliseIp(who)
  if (isIP(ip) === 0) throw new BannedParameterInvalidError(`"who" must be an IP address when "as" is ip_address, not ${JSON.stringify(who)}`)
  return ip
}

/** A peer address in the form entries are stored in (`::ffff:10.0.0.1` -> `10.0.0.1`). */
export function normaliseIp (address: string): string {
  const lower = address.toLowerCase()
  return lower.startsWith('::ffff:') && isIP(lower.slice(7)) === 4 ? lower.slice(7) : lower
}

/**
 * A complete entry from API or CLI input, checked: `reason` and `desc` default to `''`, `by`
 * to {@link BANNED_BY_UNKNOWN},
 * `until` to now + {@link DEFAULT_BAN_SECONDS}. `until` must be whole seconds in the
 * future; a value that looks like milliseconds is refused rather than banning for ever.
 */
export function parseBannedInput (input: BannedInput, nowMs: number): BannedEntry {
  if (input === null || typeof input !== 'object') throw new BannedParameterInvalidError('a banned entry must be an object {who, as, reason, desc, until}')
  const as = parseBannedAs(input.as)
  const who = parseBannedWho(input.who, as)
  const nowSeconds = Math.floor(nowMs / 1000)
  return {
    who,
    as,
    reason: optionalText(input.reason, 'reason'),
    desc: optionalText(input.desc, 'desc'),
    by: input.by === undefined || input.by === null || input.by === '' ? BANNED_BY_UNKNOWN : optionalText(input.by, 'by'),
    until: input.until === undefined || input.until === null || input.until === ''
      ? nowSeconds + DEFAULT_BAN_SECONDS
      : parseUntil(input.until, nowSeconds)
  }
}

function optionalText (value: unknown, field: string): string {
  if (value === undefined || value === null) return ''
  if (typeof value !== 'string') throw new BannedParameterInvalidError(`"${field}" must be a string, not ${JSON.stringify(value)}`)
  return value
}

function parseUntil (value: unknown, nowSeconds: number): number {
  const until = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value.trim()) : value
  if (typeof until !== 'number' || !Number.isInteger(until)) {
    throw new BannedParameterInvalidError(`"until" must be an integer timestamp in seconds since the epoch, not ${JSON.stringify(value)}`)
  }
  if (until >= MAX_UNTIL) {
    throw new BannedParameterInvalidError(`"until" ${until} is too large: give seconds since the epoch, not milliseconds`)
  }
  if (until <= nowSeconds) {
    throw new BannedParameterInvalidError(`"until" ${until} is not in the future (now is ${nowSeconds} seconds since the epoch)`)
  }
  return until
}
