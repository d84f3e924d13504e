/**
 * The rule engine's section of a data backup (docs/backup.md): `resources`, `rules` and
 * `schemas` in EMQ X 4.4's form (emqx_mgmt_data_backup; `schemas` as EMQ X Enterprise wrote
 * them). Ids are kept, so that rules still name their resources.
 *
 * Export: resource configs and action params with their credentials masked (`******`, as the
 * API shows them) unless the operator asks for them (`withSecrets`). Import: a masked secret
 * keeps the value of a stored resource of the same id; otherwise the resource is imported and
 * a note says which credentials to set. What Starling cannot take is skipped and listed: a
 * resource of a type no loaded plugin provides (EMQ X Enterprise's `bridge_kafka` ...), a rule
 * whose SQL, action or resource is not available here, a schema that does not compile.
 * EMQ X 4.4 writes a resource's TLS files as `{"filename", "file"}` (the file's content): an
 * empty one is no file; one with content is skipped with the reason (Starling reads TLS files
 * from paths on each node).
 * From EMQ X 4.0-4.2, web_hook resources and `data_to_webserver` actions are migrated as EMQ X
 * 4.4 did: timeouts in seconds become durations, `content_type` a header, `payload_tmpl` the
 * action's `body`.
 */
import { REDACTED, maskUrl } from '../node/config/index.js'
import { ApiError } from '../node/errors.js'
import type { BackupSection, ImportContext, SkippedEntry } from '../node/ops/backup/sections.js'
import { at, entriesOf, optionalBoolean, optionalObject, optionalText, requiredText, type BackupEntry } from '../node/ops/backup/entries.js'
import { WrongTypeError } from '../node/errors.js'
import type { RuleEngine } from './engine.js'
import type { RuleEntry } from './rule-service.js'
import type { OnActionFailed, Resource, RuleAction } from './types.js'
import { maskParams } from './views.js'

/** The engine's section. */
export function ruleEngineSection (engine: Pick<RuleEngine, 'registry' | 'rules' | 'resources' | 'schemas'>): BackupSection {
  return {
    name: 'rule_engine',
    export: ({ withSecrets }) => {
      /** EMQ X 4.4's action form (`args` for params), fallbacks included, credentials masked unless asked for. */
      const exportActions = (actions: readonly RuleAction[]): BackupEntry[] => actions.map(a => ({
        id: a.id,
        name: a.name,
        fallbacks: exportActions(a.fallbacks ?? []),
        args: withSecrets ? a.params : maskParams(a.params, engine.registry.findAction(a.name)?.params)
      }))
      return {
      resources: engine.resources.list().map(r => ({
        id: r.id,
        ...(r.name !== undefined ? { name: r.name } : {}),
        type: r.type,
        config: withSecrets ? r.config : maskParams(r.config, engine.registry.findResourceType(r.type)?.params),
        created_at: r.created_at,
        description: r.description
      })),
      rules: engine.rules.list().map(rule => ({
        id: rule.id,
        ...(rule.name !== undefined ? { name: rule.name } : {}),
        rawsql: rule.rawsql,
        actions: exportActions(rule.actions),
        on_action_failed: rule.on_action_failed ?? 'continue',
        enabled: rule.enabled,
        description: rule.description,
        created_at: rule.created_at
      })),
      // a codec service's URL may carry a token (`?token=`), masked as the API shows it
      schemas: engine.schemas.list().map(s => withSecrets || s.parser_addr?.url === undefined ? { ...s } : { ...s, parser_addr: { ...s.parser_addr, url: maskUrl(s.parser_addr.url) } })
      }
    },
    async check (file, ctx) {
      const skipped: SkippedEntry[] = []
      const notes: string[] = []
      const skip = (section: string, entry: string, reason: string): void => { skipped.push({ section, entry, reason }) }

      const schemas: Array<Awaited<ReturnType<typeof engine.schemas.checkImported>>> = []
      for (const [i, entry] of entriesOf(file, 'schemas').entries()) {
        const where = at('schemas', i)
        const name = requiredText(entry, 'name', where)
        try {
          schemas.push(await engine.schemas.checkImported({ ...entry, description: entry.description ?? entry.descr ?? '' }))
        } catch (err) {
          if (!(err instanceof ApiError)) throw err
          skip('schemas', name, err.message)
        }
      }

      const implied = impliedResourceConfigs(file, engine)
      const resources = new Map<string, Resource>()
      const migrated = new Map<string, { method?: unknown, headers: Record<string, unknown> }>()
      entriesOf(file, 'resources').forEach((entry, i) => {
        const where = at('resources', i)
        const id = requiredText(entry, 'id', where)
        const type = requiredText(entry, 'type', where)
        let config = optionalObject(entry, 'config', where)
        if (engine.registry.findResourceType(type) === undefined) {
          skip('resources', id, `resource type ${type} is not provided here (an EMQ X Enterprise type, or its plugin is not loaded)`)
          return
        }
        const files = tlsFilesOf(config)
        if (files.inline.length > 0) {
          skip('resources', id, `${files.inline.join(', ')} came as file content: Starling reads TLS files from paths; write ${files.inline.length === 1 ? 'it' : 'them'} to a file on each node and create the resource with the path`)
          return
        }
        config = files.config
        const fromActions = implied.get(id)
        if (fromActions !== undefined) {
          config = { ...config, ...fromActions.config }
          notes.push(`resource ${id}: ${Object.entries(fromActions.config).map(([k, v]) => `${k} ${JSON.stringify(v)}`).join(', ')} from the params of its ${[...fromActions.actions].join(', ')} action (EMQ X kept ${Object.keys(fromActions.config).length === 1 ? 'it' : 'them'} per action, Starling per resource)`)
        }
        if (type === 'web_hook' && ctx.version < '4.3') {
          const old = migrateWebHook(config)
          config = old.config
          migrated.set(id, old.action)
        }
        try {
          resources.set(id, engine.resources.checkImported({
            id,
            type,
            config,
            description: optionalText(entry, 'description', where),
            created_at: typeof entry.created_at === 'number' ? entry.created_at : undefined,
            name: typeof entry.name === 'string' ? entry.name : undefined
          }))
        } catch (err) {
          if (!(err instanceof ApiError)) throw err
          skip('resources', id, err.message)
          return
        }
        const masked = Object.entries(resources.get(id)?.config ?? {}).filter(([, v]) => JSON.stringify(v)?.includes(REDACTED) === true).map(([k]) => k)
        if (masked.length > 0) notes.push(`resource ${id}: ${masked.join(', ')} came masked (an export without --with-secrets); set ${masked.length === 1 ? 'it' : 'them'} with PUT /resources/${id}`)
      })

      const rules: RuleEntry[] = []
      const resourceOf = (id: string): Resource | undefined => resources.get(id) ?? engine.resources.find(id)
      for (const [i, entry] of entriesOf(file, 'rules').entries()) {
        const where = at('rules', i)
        const id = requiredText(entry, 'id', where)
        const rawsql = requiredText(entry, 'rawsql', where)
        const actions = actionsOf(entry, where, ctx, migrated)
        const all = flatActions(actions)
        const gone = all.map(a => a.params.$resource).find(r => typeof r === 'string' && resourceOf(r) === undefined)
        if (gone !== undefined) {
          skip('rules', id, `its resource ${String(gone)} is not imported`)
          continue
        }
        const unknown = all.find(a => engine.registry.findAction(a.name) === undefined)
        if (unknown !== undefined) {
          skip('rules', id, `action ${unknown.name} is not provided here (an EMQ X Enterprise action, or its plugin is not loaded)`)
          continue
        }
        try {
          rules.push(await engine.rules.checkImported({
            id,
            name: typeof entry.name === 'string' ? entry.name : undefined,
            rawsql,
            actions,
            ...(entry.on_action_failed !== undefined ? { on_action_failed: entry.on_action_failed as OnActionFailed } : {}),
            enabled: optionalBoolean(entry, 'enabled', where, true),
            description: optionalText(entry, 'description', where),
            created_at: typeof entry.created_at === 'number' ? entry.created_at : undefined
          }, resourceOf))
        } catch (err) {
          if (!(err instanceof ApiError)) throw err
          skip('rules', id, err.message)
        }
      }

      return {
        counts: { schemas: schemas.length, resources: resources.size, rules: rules.length },
        skipped,
        notes,
        apply: async () => {
          for (const s of schemas) await engine.schemas.putImported(s)
          for (const r of resources.values()) await engine.resources.putImported(r)
          for (const r of rules) await engine.rules.putImported(r)
        }
      }
    }
  }
}

/** A rule entry's actions as `{name, params}`: EMQ X's `args` (ours too) or `params`. */
/** An imported action, with its fallbacks. */
interface ImportedAction { name: string, params: Record<string, unknown>, fallbacks?: ImportedAction[] }

/** Every action of `actions` with every fallback (theirs too). */
function flatActions (actions: readonly ImportedAction[]): ImportedAction[] {
  return actions.flatMap(a => [a, ...flatActions(a.fallbacks ?? [])])
}

/** `entry`'s `actions` (or, at `list`, a `fallbacks` array) in Starling's form, with their fallbacks. */
function actionsOf (entry: BackupEntry, where: string, ctx: ImportContext, migrated: ReadonlyMap<string, { method?: unknown, headers: Record<string, unknown> }>, list = 'actions'): ImportedAction[] {
  const given = entry[list]
  if (given === undefined && list === 'fallbacks') return []
  if (!Array.isArray(given)) throw new WrongTypeError(`${where}.${list} must be an array, not ${JSON.stringify(given)}`)
  return given.map((a: unknown, i: number) => {
    const here = `${where}.${list}[${i}]`
    if (typeof a !== 'object' || a === null || Array.isArray(a)) throw new WrongTypeError(`${here} must be an object {name, args}`)
    const action = a as BackupEntry
    const name = requiredText(action, 'name', here)
    let params = action.args !== undefined ? optionalObject(action, 'args', here) : optionalObject(action, 'params', here)
    const resource = params.$resource
    if (name === 'data_to_webserver' && ctx.version < '4.3' && typeof resource === 'string') {
      // 4.0-4.2: the body template was payload_tmpl; method and headers were the resource's
      const { payload_tmpl: body, ...rest } = params
      const old = migrated.get(resource)
      params = {
        ...rest,
        ...(body !== undefined ? { body } : {}),
        ...(old?.method !== undefined && rest.method === undefined ? { method: old.method } : {}),
        ...(old !== undefined && Object.keys(old.headers).length > 0 && rest.headers === undefined ? { headers: old.headers } : {})
      }
    }
    const fallbacks = actionsOf(action, here, ctx, migrated, 'fallbacks')
    return fallbacks.length > 0 ? { name, params, fallbacks } : { name, params }
  })
}

/**
 * The resource config the rules' actions stand for (ActionDefinition.resourceConfigOf), by
 * resource id: `true` over `false` and the larger number where two actions differ.
 */
function impliedResourceConfigs (file: Readonly<Record<string, unknown>>, engine: Pick<RuleEngine, 'registry'>): Map<string, { config: Record<string, unknown>, actions: Set<string> }> {
  const out = new Map<string, { config: Record<string, unknown>, actions: Set<string> }>()
  const visit = (actions: unknown): void => {
    if (!Array.isArray(actions)) return
    for (const a of actions as Array<Record<string, unknown> | null>) {
      if (typeof a !== 'object' || a === null) continue
      visit(a.fallbacks)
      const params = (a.args ?? a.params) as Record<string, unknown> | undefined
      const def = typeof a.name === 'string' ? engine.registry.findAction(a.name) : undefined
      if (def?.resourceConfigOf === undefined || typeof params !== 'object' || params === null || typeof params.$resource !== 'string') continue
      const implied = def.resourceConfigOf(params)
      if (Object.keys(implied).length === 0) continue
      const entry = out.get(params.$resource) ?? { config: {}, actions: new Set<string>() }
      for (const [key, value] of Object.entries(implied)) {
        const before = entry.config[key]
        entry.config[key] = before === undefined || value === true || (typeof value === 'number' && typeof before === 'number' && value > before) ? value : before
      }
      entry.actions.add(def.name)
      out.set(params.$resource, entry)
    }
  }
  for (const rule of entriesOf(file, 'rules')) visit(rule.actions)
  return out
}

/** `config` with EMQ X 4.4's empty `{"filename", "file"}` TLS files as no file, and the keys of those with content. */
function tlsFilesOf (config: Record<string, unknown>): { config: Record<string, unknown>, inline: string[] } {
  const out: Record<string, unknown> = { ...config }
  const inline: string[] = []
  for (const [key, value] of Object.entries(config)) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !('file' in value)) continue
    const { file, filename } = value as { file?: unknown, filename?: unknown }
    if ((file ?? '') === '' && (filename ?? '') === '') out[key] = ''
    else inline.push(`${key} (${String(filename)})`)
  }
  return { config: out, inline }
}

/** EMQ X 4.0-4.2's web_hook config in 4.4's terms: seconds as durations, content_type a header. */
function migrateWebHook (config: Record<string, unknown>): { config: Record<string, unknown>, action: { method?: unknown, headers: Record<string, unknown> } } {
  const { content_type: contentType, headers, method, ...rest } = config
  const out: Record<string, unknown> = { ...rest }
  for (const key of ['connect_timeout', 'request_timeout']) {
    if (typeof out[key] === 'number') out[key] = `${String(out[key])}s`
  }
  const actionHeaders: Record<string, unknown> = typeof headers === 'object' && headers !== null && !Array.isArray(headers) ? { ...headers } : {}
  if (typeof contentType === 'string') actionHeaders['content-type'] = contentType
  return { config: out, action: { method, headers: actionHeaders } }
}
