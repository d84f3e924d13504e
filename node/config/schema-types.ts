/**
 * The shape of a configuration schema, shared by the node's schema (`schema.ts`) and the
 * plugins' schemas (`loadPluginConfig`), and the type-level mapping from a schema to the
 * typed object a loader returns.
 */
import type { ListenerAddress } from './value-types.js'

/** The value types a key can have. */
export type ValueType = 'string' | 'int' | 'float' | 'bool' | 'duration' | 'size' | 'percent' | 'address' | 'enum' | 'path'

/** What every key declares, whatever its type. */
interface BaseSpec {
  /** One line for docs, the shipped file and the API. */
  readonly doc: string
  /**
   * Whether a change through the configs API takes effect at run time (true) or needs a
   * restart (false): true exactly for the keys node/ops/config-live.ts applies (a test
   * checks), so the docs' `live` column is what a running node does.
   */
  readonly live: boolean
  /**
   * The default, written as it would be in the file (`1m`, `1MB`, `on`). Every key of the
   * node's schema has one; a plugin key without one must be set.
   */
  readonly default?: string
  /**
   * A credential (cookie, password, secret): the API, the CLI and the logs show
   * {@link REDACTED} instead of a non-empty value, and a change that sends REDACTED back
   * leaves the value as it is.
   */
  readonly secret?: boolean
  /**
   * A value that may carry a credential in part (node/config/secret-values.ts): `url` (its
   * userinfo and credential query values: `?token=`), `pairs` (the credential values of a
   * `name=value,...` list), `header` (a request header's value, unless the header is
   * `content-type` or `accept`). Those parts are shown as {@link REDACTED}, and a value sent
   * back with them keeps the stored parts.
   */
  readonly secretParts?: 'url' | 'pairs' | 'header'
}

/** What a secret key's value is shown as. */
export const REDACTED = '******'

/** Free text; `pattern` (with `hint` saying it in words) restricts it. Empty is refused unless `allowEmpty`. */
export interface StringSpec extends BaseSpec {
  readonly type: 'string'
  readonly pattern?: RegExp
  readonly hint?: string
  readonly allowEmpty?: boolean
}

/** A number; `min` and `max` are inclusive. */
export interface NumberSpec extends BaseSpec {
  readonly type: 'int' | 'float'
  readonly min?: number
  readonly max?: number
}

/**
 * A duration (value in milliseconds), a byte size (value in bytes) or a percentage (value a
 * fraction, `80%` = 0.8); bounds in the same unit.
 */
export interface QuantitySpec extends BaseSpec {
  readonly type: 'duration' | 'size' | 'percent'
  readonly min?: number
  readonly max?: number
}

/** `on|off|true|false`. */
export interface BoolSpec extends BaseSpec {
  readonly type: 'bool'
}

/** A listen address; `optional` lets `off` (or an empty value) turn it off (value `null`). */
export interface AddressSpec extends BaseSpec {
  readonly type: 'address'
  readonly optional?: boolean
}

/** One of a fixed list of words. */
export interface EnumSpec extends BaseSpec {
  readonly type: 'enum'
  readonly values: readonly string[]
}

/** A file or directory path, kept as written; `resolvePath` resolves it. Never empty. */
export interface PathSpec extends BaseSpec {
  readonly type: 'path'
}

/** The declaration of one key. */
export type KeySpec = StringSpec | NumberSpec | QuantitySpec | BoolSpec | AddressSpec | EnumSpec | PathSpec

/**
 * A schema: key -> spec. Plugin schemas may use the placeholder `<name>` for one segment
 * chosen by the user (`bridge.mqtt.<name>.address`).
 */
export type ConfigSchema = Readonly<Record<string, KeySpec>>

/** The run-time value type of a key spec. */
export type ValueOf<S> =
  S extends { readonly type: 'int' | 'float' | 'duration' | 'size' | 'percent' } ? number
    : S extends { readonly type: 'bool' } ? boolean
      : S extends { readonly type: 'address', readonly optional: true } ? ListenerAddress | null
        : S extends { readonly type: 'address' } ? ListenerAddress
          : S extends { readonly type: 'enum', readonly values: readonly (infer V extends string)[] } ? V
            : string

/** Any value a key can hold. */
export type ConfigValue = string | number | boolean | ListenerAddress | null

/** The typed, flat object a schema loads into. */
export type ConfigValues<S extends ConfigSchema> = { readonly [K in keyof S]: ValueOf<S[K]> }

/** The keys of a schema whose type is `path`. */
export type PathKeys<S extends ConfigSchema> = { [K in keyof S]: S[K] extends { readonly type: 'path' } ? K : never }[keyof S]

/** One key as `configKeys()` lists it. */
export interface ConfigKeyInfo {
  readonly key: string
  readonly type: ValueType
  /** Default as written in the file; `''` for an empty default, undefined when there is none. */
  readonly default: string | undefined
  /** What the key accepts, in words. */
  readonly allowed: string
  readonly doc: string
  readonly live: boolean
  /** The environment variable that sets it (`STARLING_MQTT__MAX_PACKET_SIZE`). */
  readonly env: string
}
