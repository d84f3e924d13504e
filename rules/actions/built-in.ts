/**
 * The `built_in` resource type and its actions (EMQ X's emqx_rule_actions): `inspect` logs
 * what a rule selected, `republish` publishes a new message from a template, `do_nothing`
 * only counts. None of them takes a resource.
 */
import { topicNameError } from '../../node/mqtt/topic.js'
import { fillString, lookup } from '../../node/template/index.js'
import type { ActionDefinition, ResourceTypeDefinition } from '../types.js'

/** The application name built-in actions report as their `app`. */
export const RULE_ENGINE_APP = 'svc_rule_engine'

/** `built_in`: the type of the actions that need no resource. */
export const builtInResourceType: ResourceTypeDefinition = {
  name: 'built_in',
  provider: RULE_ENGINE_APP,
  title: 'Built-In Resource Type',
  description: 'The built in resource type for debug purpose',
  params: {}
}

/** `inspect` (`built_in:inspect_action`): logs the selected data, the event and the params. */
export const inspectAction: ActionDefinition = {
  name: 'inspect',
  aliases: ['built_in:inspect_action'],
  app: RULE_ENGINE_APP,
  for: '$any',
  types: [],
  title: 'Inspect (debug)',
  description: 'Inspect the details of action params for debug purpose: logs the selected data, the environment and the params at info level',
  params: {},
  run (selected, ctx) {
    ctx.logger.info({ rule_id: ctx.ruleId, selected, envs: ctx.env, params: ctx.params }, '[inspect] selected data, envs and action params')
  }
}

/**
 * `republish` (`built_in:republish_action`): publishes `payload_tmpl` (default `${payload}`;
 * an empty template publishes the selected data as JSON) to `target_topic` (placeholders
 * allowed) at `target_qos` (-1 keeps the triggering message's QoS).
 */
export const republishAction: ActionDefinition = {
  name: 'republish',
  aliases: ['built_in:republish_action'],
  app: RULE_ENGINE_APP,
  for: '$any',
  types: [],
  title: 'Republish',
  description: 'Republish a MQTT message to another topic',
  params: {
    target_topic: {
      type: 'string',
      format: 'topic',
      required: true,
      title: 'Target Topic',
      description: 'The topic to republish to; ${key} placeholders are filled from the selected data'
    },
    target_qos: {
      type: 'integer',
      enum: [-1, 0, 1, 2],
      required: false,
      default: 0,
      title: 'Target QoS',
      description: 'The QoS of the republished message; -1 keeps the QoS of the message that triggered the rule'
    },
    target_retain: {
      type: 'boolean',
      required: false,
      default: false,
      title: 'Target Retain',
      description: 'The retain flag of the republished message'
    },
    payload_tmpl: {
      type: 'string',
      format: 'template',
      required: false,
      default: '${payload}',
      title: 'Payload Template',
      description: 'The payload, with ${key} placeholders filled from the selected data; empty: the selected data as JSON'
    }
  },
  async run (selected, ctx) {
    const topic = fillString(String(ctx.params.target_topic), selected)
    const bad = topicNameError(topic)
    if (bad !== null) throw new Error(`republish: target topic '${topic}' is not a topic name: ${bad}`)
    const wanted = ctx.params.target_qos as number
    const keep = ctx.env.qos ?? selected.qos
    const qos = (wanted === -1 ? (keep === 1 || keep === 2 ? keep : 0) : wanted) as 0 | 1 | 2
    const template = String(ctx.params.payload_tmpl ?? '')
    const payload = template === '' ? Buffer.from(JSON.stringify(selected)) : payloadOf(template, selected)
    await ctx.publish({ topic, payload, qos, retain: ctx.params.target_retain === true })
  }
}

/**
 * The filled template as bytes. A template that is one placeholder of a binary value
 * (`${payload}` of a binary message, `${out}` of `schema_encode(...) as out`) publishes
 * those bytes unchanged: rendered as text they would not survive non-UTF-8 bytes.
 */
function payloadOf (template: string, selected: Record<string, unknown>): Buffer {
  const whole = /^\$\{([^}]*)\}$/.exec(template)
  if (whole !== null) {
    const value = lookup(selected, whole[1])
    if (Buffer.isBuffer(value)) return value
  }
  return Buffer.from(fillString(template, selected))
}

/** `do_nothing`: runs and succeeds (counts the rule's hits without side effects). */
export const doNothingAction: ActionDefinition = {
  name: 'do_nothing',
  aliases: ['built_in:do_nothing_action'],
  app: RULE_ENGINE_APP,
  for: '$any',
  types: [],
  title: 'Do Nothing (debug)',
  description: 'This action does nothing and is only for debug purpose',
  params: {},
  run () {}
}

/** Every built-in action. */
export const BUILT_IN_ACTIONS: readonly ActionDefinition[] = [inspectAction, republishAction, doNothingAction]
