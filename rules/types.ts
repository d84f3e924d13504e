/**
 * The rule engine's records (spec: Rule, Action, Resource, Resource type). Actions and
 * resource types are defined by code ({@link ActionDefinition}, {@link ResourceTypeDefinition});
 * rules and resources are created through the API or the CLI and kept in the node's store.
 */
import type { Logger } from '../node/logger.js'
import type { StarlingNode } from '../node/node.js'

/** The JSON type of a parameter (EMQ X 4's `type` of an action's or resource type's param). */
export type ParamType = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array'

/**
 * How one parameter is checked and shown (spec: Action `params`): `description`, `format`,
 * `required`, `title`, `type`, and for objects `schema`. A missing required parameter is
 * error 107, one of the wrong type (or outside `enum`, or not of its `format`) 108.
 */
export interface ParamSpec {
  type: ParamType
  required: boolean
  title: string
  description: string
  /**
   * `topic` (a topic name, `${key}` placeholders allowed), `url` (http or https), `template`,
   * `duration` (with `type: 'string'`: text such as `5s`, `500ms`, `1m`, or a number of
   * milliseconds, which older stored configs hold; read with `paramDuration`, rules/params.ts).
   */
  format?: 'topic' | 'url' | 'template' | 'duration'
  /** The allowed values. */
  enum?: unknown[]
  /** Used when the parameter is absent. */
  default?: unknown
  /** For objects: the specs of their keys (shown, not enforced). */
  schema?: Record<string, unknown>
  /** A credential (a password): the API and the CLI show it as `******`, the store keeps it. */
  secret?: boolean
  /**
   * A value that carries credentials in part (node/config/secret-values.ts): `url` (userinfo
   * and credential query values such as `?token=`), `headers` (an object of request headers,
   * or a list of `{key, value}`: every value but `content-type`'s and `accept`'s). Those parts
   * are shown as `******`.
   */
  secretParts?: 'url' | 'headers'
}

/** Parameter specs by parameter name. */
export type ParamSpecs = Record<string, ParamSpec>

/** What an action's `for` says it can be bound to: a hook name, `$any` or `$events`. */
export type ActionFor = string

/**
 * What an action run gets beside the selected data. It carries no node: an action reaches
 * the broker through `publish` and a backend through its `resource` (the node's name is the
 * event's `node` column in `env`).
 */
export interface ActionContext {
  logger: Logger
  /** The rule running the action. */
  ruleId: string
  /** The action instance's id (unique per rule action), used by the republish loop guard. */
  actionId: string
  /** The action's params with defaults filled (the bound resource's id in `$resource`). */
  params: Record<string, unknown>
  /** The bound resource, when the action takes one. */
  resource: Resource | undefined
  /**
   * The bound resource's running part on this node, for types that have one (a bridge):
   * waits while it is being opened; undefined when the type has none or it is not open.
   */
  instance: () => Promise<ResourceInstance | undefined>
  /** The event's columns (EMQ X's `Envs`): `qos`, `flags`, `topic` ... of the triggering event. */
  env: Record<string, unknown>
  /**
   * Publishes a message as the rule (the republish action): the message is marked with the
   * triggering message's rule chain plus this rule, so it never triggers this rule again.
   */
  publish: (message: RulePublish) => Promise<void>
}

/** A message an action publishes. */
export interface RulePublish {
  topic: string
  payload: Buffer
  qos: 0 | 1 | 2
  retain: boolean
}

/**
 * An action as code defines it. `run` may be sync or async; a throw or a rejection is counted
 * as `failed` for the action instance and logged, never propagated to the broker.
 */
export interface ActionDefinition {
  /** The primary name (`inspect`, `web_hook:event_action` ...). */
  name: string
  /** Other names that resolve to this action (`built_in:inspect_action`). */
  aliases: string[]
  /** The application providing it (EMQ X's `app`), e.g. `svc_rule_engine`, `svc_web_hook`. */
  app: string
  for: ActionFor
  /** The resource types it binds to (`[]` for actions that need no resource). */
  types: string[]
  title: string
  description: string
  params: ParamSpecs
  /**
   * Checks params beyond their specs when a rule is created or changed, after defaults are
   * filled (a template that does not compile); throws a catalogue error (108) to refuse the rule.
   */
  check?: (params: Record<string, unknown>) => void
  /**
   * Whether a run with these params and this bound resource holds the QoS 1/2 publish that
   * triggered it (message.publish rules): the publisher's PUBACK/PUBREC then waits until the
   * run settles (a data action with its local buffer: the row is on disk; in sync mode: the
   * row is written or counted failed, within sync_timeout). Asked when rules or
   * resources change, never per message; absent: never held.
   */
  holdsPublish?: (params: Record<string, unknown>, resource: Resource | undefined) => boolean
  /**
   * The resource config an EMQ X backup's params of this action stand for: a setting EMQ X
   * kept per action and Starling per resource (data_to_kafka's `cache_mode` is the resource's
   * `local_buffer`). A data import merges it into the bound resource's config (with a note);
   * absent: none.
   */
  resourceConfigOf?: (params: Record<string, unknown>) => Record<string, unknown>
  run: (selected: Record<string, unknown>, ctx: ActionContext) => Promise<void> | void
  /**
   * A run without a promise or a context per run, for actions that hand their runs to a
   * running resource instance (the data actions, which batch them): given the bound
   * resource's instance on this node, a writer taking one run's selected data and telling
   * `settle` its outcome; undefined when this instance cannot (the run then goes through
   * `run`). Asked when the action first runs on an instance, never per message. The runtime
   * uses it only for runs nothing else waits on (no held publish, no fallbacks,
   * `on_action_failed` continue); those go through `run`.
   */
  rowWriter?: (params: Record<string, unknown>, instance: ResourceInstance, actionId: string) => RowWriter | undefined
}

/**
 * The outcome of one run handed to a {@link RowWriter}: exactly one of the two is called,
 * exactly once, now or later (a class instance is fine: they are called as methods).
 */
export interface RowSettle {
  resolve: () => void
  reject: (err: Error) => void
}

/** See {@link ActionDefinition.rowWriter}. A throw counts as the run failed (and `settle` is not called). */
export type RowWriter = (selected: Record<string, unknown>, settle: RowSettle) => void

/** A resource type as code defines it (spec: Resource type). */
export interface ResourceTypeDefinition {
  name: string
  /** The application providing it (EMQ X's `provider`). */
  provider: string
  title: string
  description: string
  /** The specs the resource's `config` is validated against. */
  params: ParamSpecs
  /** Whether a resource of this type works now; absent means always alive. */
  healthCheck?: (resource: Resource, signal: AbortSignal) => Promise<boolean>
  /**
   * Checks a config beyond its params (an address's form, a topic) when a resource is
   * created, after defaults are filled; throws a catalogue error (108) to refuse it.
   */
  checkConfig?: (config: Record<string, unknown>) => void
  /**
   * Whether the backend a config names can be reached, tried on the node handling a create
   * or a change before anything is stored (EMQ X refused a resource it could not connect
   * to): resolves when it can, rejects with why not (a RefusedError, 102, is then answered,
   * naming the resource type and the reason). Other nodes open their instance without it.
   */
  probe?: (config: Record<string, unknown>, components: ResourceComponents, signal: AbortSignal) => Promise<void>
  /**
   * For types whose resources run something on each node (a bridge's connection and
   * buffer): starts it. Called on every node for each resource of the type while the rule
   * engine runs (at its start, when a resource is created here or on another node), closed
   * when the engine stops or the resource is deleted. Its `alive` is the resource's status
   * (`healthCheck` is not used then).
   */
  open?: (resource: Resource, components: ResourceComponents) => Promise<ResourceInstance>
}

/** What a resource type's `open` is given of its node. */
export type ResourceComponents = Pick<StarlingNode, 'name' | 'logger' | 'config' | 'broker' | 'cluster' | 'services'> & {
  /** The node's data directory (`node.data_dir`, resolved): where a disk buffer goes. */
  dataDir: string
}

/** A resource's running part on one node, made by its type's `open`. */
export interface ResourceInstance {
  /** Whether it works now (`status.is_alive`). */
  alive: () => boolean | Promise<boolean>
  /**
   * Stops it. `removed`: the resource was deleted, so what it keeps on disk goes too;
   * otherwise (the engine stops, the node stops) that stays for the next open.
   */
  close: (removed: boolean) => Promise<void>
}

/** An action of a rule, as stored: `params.$resource` names the bound resource. */
export interface RuleAction {
  /** Unique id of this action instance, e.g. `inspect_1a2b3c4d` (metrics key). */
  id: string
  name: string
  params: Record<string, unknown>
  /**
   * EMQ X 4.4's `fallbacks`: actions run, with the same selected data, when this one fails
   * (each with its own id and counters; they may have fallbacks of their own). Absent in
   * rules stored before Starling had them: none.
   */
  fallbacks?: RuleAction[]
}

/**
 * EMQ X 4.4's `on_action_failed`: after an action failed (and its fallbacks ran), `continue`
 * runs the rule's other actions as usual; `stop` skips the actions after it in the list.
 */
export type OnActionFailed = 'continue' | 'stop'

/** A rule as stored (spec: Rule). `metrics` are added when it is shown. */
export interface Rule {
  id: string
  name?: string
  /** The event the rule hangs on (events joined with `,` when FROM names several). */
  for: string
  rawsql: string
  actions: RuleAction[]
  /** Absent in rules stored before Starling had it: `continue`. */
  on_action_failed?: OnActionFailed
  enabled: boolean
  description: string
  /** When it was created, ms since epoch. */
  created_at: number
}

/** A resource as stored (spec: Resource). */
export interface Resource {
  id: string
  name?: string
  type: string
  config: Record<string, unknown>
  description: string
  /** Always the text `undefined`, as in the spec's examples (its meaning is not shown). */
  attrs: 'undefined'
  created_at: number
}

/** A rule's counters on one node (EMQ X 4's `metrics` item). */
export interface RuleNodeMetrics {
  node: string
  /** SQL matches (the spec's hits). */
  matched: number
  /** Matches per second over the last sampling period (the hit rate). */
  speed: number
  /** The highest `speed` seen (peak hit rate). */
  speed_max: number
  /** Average `speed` over the last 5 minutes. */
  speed_last5m: number
  /** Evaluations that threw (the rule counted as not matching). */
  failed: number
}

/** An action instance's counters on one node (EMQ X 4's action `metrics` item). */
export interface ActionNodeMetrics {
  node: string
  /** Runs started. */
  taken: number
  success: number
  failed: number
}
