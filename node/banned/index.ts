/**
 * The banned list: entries refusing a client id, username or IP address at CONNECT until a
 * time, the service layer the CLI and the API share, and its ctl commands. See docs/banned.md.
 */
export {
  BANNED_AS, BANNED_BY_CTL, BANNED_BY_UNKNOWN, DEFAULT_BAN_SECONDS, BannedError, BannedParameterMissingError, BannedParameterInvalidError,
  BannedEntryNotFoundError, bannedKey, normaliseIp, parseBannedAs, parseBannedWho, parseBannedInput, shownBanned
} from './banned-entry.js'
export type { BannedAs, BannedEntry, BannedInput } from './banned-entry.js'
export { BANNED_TABLE, DEFAULT_PURGE_INTERVAL_MS, createBannedService } from './banned-service.js'
export type { BannedService, BannedServiceComponents, BannedServiceOptions } from './banned-service.js'
export {
  BANNED_CTL_COMMANDS, bannedListCommand, bannedAddCommand, bannedDelCommand, bannedHandlers, registerBannedControl
} from './ctl.js'
