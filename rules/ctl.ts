/**
 * `starling-ctl rules | rule-actions | resources | resource-types` (spec: CLI table): the
 * command table entries and how their results print. Records print as EMQ X 4's
 * emqx_rule_engine_cli printed them, `rule(id='...', for='...', rawsql='...', actions=...,
 * metrics=..., enabled='true', description='...')`, one per line, with nested values
 * (actions, metrics, config, status, params) as JSON. The node side is in
 * rules/rule-ops.ts; `--json` prints the API's objects.
 */
import { defineCommand, type CtlCommand } from '../node/control/commands.js'
import type { ActionInfo, ResourceTypeInfo } from './registry.js'
import type { ResourceView, RuleView } from './views.js'

/** `'text'` with quotes and line breaks kept readable on one line. */
function q (text: unknown): string {
  return `'${String(text ?? '').replace(/\r?\n/g, ' ')}'`
}

const json = (value: unknown): string => JSON.stringify(value ?? null)

/** One rule line (EMQ X 4.4's: the actions with their fallbacks, then on_action_failed). */
export function formatRule (r: RuleView): string {
  return `rule(id=${q(r.id)}, for=${q(r.for)}, rawsql=${q(r.rawsql)}, actions=${json(printableActions(r.actions))}, ` +
    `on_action_failed=${q(r.on_action_failed)}, metrics=${json(r.metrics)}, enabled=${q(r.enabled)}, description=${q(r.description)})\n`
}

/** Actions as a rule line prints them: id, name, params, metrics and fallbacks, in that order. */
function printableActions (actions: RuleView['actions']): unknown[] {
  return actions.map(a => ({ id: a.id, name: a.name, params: a.params, metrics: a.metrics, fallbacks: printableActions(a.fallbacks) }))
}

/** One action line; `params` too when `withParams`. */
export function formatAction (a: ActionInfo, withParams = false): string {
  const params = withParams ? `, params=${json(a.params)}` : ''
  return `action(name=${q(a.name)}, app=${q(a.app)}, for=${q(a.for)}, types=${json(a.types)}, title=${q(a.title)}, description=${q(a.description)}${params})\n`
}

/** One resource line (`status` when shown). */
export function formatResource (r: ResourceView): string {
  const status = r.status !== undefined ? `, status=${json(r.status)}` : ''
  return `resource(id=${q(r.id)}, type=${q(r.type)}, config=${json(r.config)}${status}, description=${q(r.description)})\n`
}

/** One resource type line; `params` too when `withParams`. */
export function formatResourceType (t: ResourceTypeInfo, withParams = false): string {
  const params = withParams ? `, params=${json(t.params)}` : ''
  return `resource_type(name=${q(t.name)}, provider=${q(t.provider)}, title=${q(t.title)}, description=${q(t.description)}${params})\n`
}

const RULE_ID = { name: 'RuleId', description: 'the rule id, e.g. rule:1a2b3c4d' }
const RESOURCE_ID = { name: 'ResourceId', description: 'the resource id, e.g. web_hook:my_server' }
const DESCR = { flags: '-d, --descr <descr>', description: 'description' }
const ON_ACTION_FAILED = { flags: '-g, --on_action_failed <on_action_failed>', description: "'continue' or 'stop' when an action of the rule fails" }

/** The rule-engine commands, for `ALL_CTL_COMMANDS`. */
export const RULE_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  defineCommand<RuleView[]>({
    words: ['rules', 'list'],
    description: 'List all rules with their metrics',
    render: (rules) => rules.map(formatRule).join('')
  }),
  defineCommand<RuleView>({
    words: ['rules', 'show'],
    description: 'Show a rule',
    args: [RULE_ID],
    render: formatRule
  }),
  defineCommand<RuleView>({
    words: ['rules', 'create'],
    description: 'Create a rule from its SQL and its actions (JSON [{"name":..,"params":{..}}]); prints the new id',
    args: [{ name: 'sql', description: 'the rule SQL' }, { name: 'actions', description: 'the actions as JSON' }],
    options: [
      DESCR,
      { flags: '-n, --name <name>', description: 'name the rule (id <name>:<number>)' },
      { flags: '-e, --enabled <enabled>', description: 'true (default) or false' },
      ON_ACTION_FAILED
    ],
    render: (r) => `Rule ${r.id} created\n`
  }),
  defineCommand<RuleView>({
    words: ['rules', 'update'],
    description: 'Change the SQL, actions (with fallbacks), on_action_failed, enabled state or description of a rule',
    args: [RULE_ID],
    options: [
      { flags: '-s, --sql <sql>', description: 'new SQL' },
      { flags: '-a, --actions <actions>', description: 'new actions as JSON' },
      { flags: '-e, --enabled <enabled>', description: 'true or false' },
      ON_ACTION_FAILED,
      DESCR
    ],
    render: (r) => `Rule ${r.id} updated\n`
  }),
  defineCommand<string>({
    words: ['rules', 'delete'],
    description: 'Delete a rule',
    args: [RULE_ID],
    render: () => 'ok\n'
  }),
  defineCommand<ActionInfo[]>({
    words: ['rule-actions', 'list'],
    description: 'List actions (those for an event type with -k)',
    options: [{ flags: '-k, --eventtype <eventtype>', description: 'an event, e.g. message.publish' }],
    render: (actions) => actions.map(a => formatAction(a)).join('')
  }),
  defineCommand<ActionInfo>({
    words: ['rule-actions', 'show'],
    description: 'Show an action (either naming style)',
    args: [{ name: 'ActionId', description: 'the action name, e.g. inspect or built_in:inspect_action' }],
    render: (a) => formatAction(a, true)
  }),
  defineCommand<ResourceView>({
    words: ['resources', 'create'],
    description: 'Create a resource of a type; prints the new id',
    args: [{ name: 'type', description: 'the resource type, e.g. web_hook' }],
    options: [
      // not --config: that is the global option naming the node's configuration file
      { flags: '-c, --resource-config <config>', description: 'the config as JSON, e.g. {"url":"http://host/path"}' },
      DESCR,
      { flags: '-n, --name <name>', description: 'name the resource (id <type>:<name>)' }
    ],
    render: (r) => `Resource ${r.id} created\n`
  }),
  defineCommand<ResourceView[]>({
    words: ['resources', 'list'],
    description: 'List resources (of a type with -t)',
    options: [{ flags: '-t, --type <type>', description: 'a resource type' }],
    render: (resources) => resources.map(formatResource).join('')
  }),
  defineCommand<ResourceView>({
    words: ['resources', 'show'],
    description: 'Show a resource with its status (health checked now) on every node',
    args: [RESOURCE_ID],
    render: formatResource
  }),
  defineCommand<string>({
    words: ['resources', 'test'],
    description: 'Check a resource as create would, whether its server answers included, creating nothing',
    args: [{ name: 'type', description: 'the resource type, e.g. backend_pgsql' }],
    options: [
      { flags: '-c, --resource-config <config>', description: 'the config as JSON' },
      DESCR
    ],
    render: () => 'Test creating resource successfully (dry-run)\n'
  }),
  defineCommand<ResourceView>({
    words: ['resources', 'update'],
    description: 'Change the config and/or description of a resource (its instance restarts with them on every node)',
    args: [RESOURCE_ID],
    options: [
      { flags: '-c, --resource-config <config>', description: 'the whole new config as JSON (****** keeps a stored credential)' },
      DESCR
    ],
    render: () => 'Resource update successfully\n'
  }),
  defineCommand<string>({
    words: ['resources', 'delete'],
    description: 'Delete a resource no rule uses',
    args: [RESOURCE_ID],
    render: () => 'ok\n'
  }),
  defineCommand<ResourceTypeInfo[]>({
    words: ['resource-types', 'list'],
    description: 'List resource types',
    render: (types) => types.map(t => formatResourceType(t)).join('')
  }),
  defineCommand<ResourceTypeInfo>({
    words: ['resource-types', 'show'],
    description: 'Show a resource type',
    args: [{ name: 'Type', description: 'the resource type, e.g. web_hook' }],
    render: (t) => formatResourceType(t, true)
  })
]
