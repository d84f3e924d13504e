/**
 * The core's sections of a data backup: the API applications (`apps`, EMQ X's `mqtt_app`)
 * and the banned list (`blacklist`, EMQ X 4's name for it in a backup). See
 * docs/backup.md for what each field carries.
 */
import type { AppsService } from '../../apps/apps.js'
import { checkAppRecord } from '../../apps/apps.js'
import { parseBannedInput, type BannedAs, type BannedInput, type BannedService } from '../../banned/index.js'
import { WrongTypeError } from '../../errors.js'
import type { BackupSection, SkippedEntry } from './sections.js'
import { at, describe, entriesOf, optionalBoolean, optionalText, requiredText } from './entries.js'

/** EMQ X 4's `who` keys in a backup's banned entry, and ours. */
const WHO_KEYS: Readonly<Record<string, BannedAs>> = { clientid: 'client_id', username: 'username', peerhost: 'ip_address' }
const WHO_OF: Readonly<Record<BannedAs, string>> = { client_id: 'clientid', username: 'username', ip_address: 'peerhost' }

/** The `apps` section; the default application (`defaultAppId`) comes from the configuration and is never replaced. */
export function appsSection (apps: AppsService, defaultAppId: () => string): BackupSection {
  return {
    name: 'apps',
    export: () => ({
      apps: apps.exportAll().map(app => ({
        id: app.app_id,
        secret: app.secret_hash,
        name: app.name,
        desc: app.desc,
        status: app.status,
        expired: app.expired ?? 'undefined'
      }))
    }),
    check (file) {
      const skipped: SkippedEntry[] = []
      const writes: Array<{ app: ReturnType<typeof checkAppRecord>, secret: string }> = []
      entriesOf(file, 'apps').forEach((entry, i) => {
        const where = at('apps', i)
        const id = requiredText(entry, 'id', where)
        const secret = requiredText(entry, 'secret', where)
        const expired = entry.expired
        const app = checkAppRecord({
          app_id: id,
          name: optionalText(entry, 'name', where, id),
          desc: optionalText(entry, 'desc', where),
          status: optionalBoolean(entry, 'status', where, true),
          // EMQ X wrote `undefined` (the atom) for never
          expired: typeof expired === 'number' ? expired : null
        })
        if (id === defaultAppId()) {
          skipped.push({ section: 'apps', entry: id, reason: 'the default application comes from management.default_application.* in the configuration' })
        } else {
          writes.push({ app, secret })
        }
      })
      return {
        counts: { apps: writes.length },
        skipped,
        notes: [],
        apply: async () => { for (const w of writes) await apps.restore(w.app, w.secret) }
      }
    }
  }
}

/** The `blacklist` section: live entries; an expired one is skipped on import. */
export function bannedSection (banned: BannedService): BackupSection {
  return {
    name: 'blacklist',
    export: () => {
      const now = Math.floor(Date.now() / 1000)
      return {
        blacklist: banned.list().map(e => ({
          who: { [WHO_OF[e.as]]: e.who },
          by: e.by,
          reason: e.reason,
          desc: e.desc,
          // Starling does not keep when an entry was made: the export's time stands for it
          at: now,
          until: e.until
        }))
      }
    },
    check (file, ctx) {
      const skipped: SkippedEntry[] = []
      const writes: BannedInput[] = []
      entriesOf(file, 'blacklist').forEach((entry, i) => {
        const where = at('blacklist', i)
        const { as, who } = whoOf(entry, where)
        const until = entry.until
        if (typeof until !== 'number' || !Number.isInteger(until)) throw new WrongTypeError(`${where}.until must be an integer (seconds since the epoch), not ${describe(until)}`)
        const input: BannedInput = {
          as,
          who,
          reason: optionalText(entry, 'reason', where),
          desc: optionalText(entry, 'desc', where),
          by: optionalText(entry, 'by', where),
          until
        }
        if (until * 1000 <= ctx.nowMs) {
          skipped.push({ section: 'blacklist', entry: `${as} ${who}`, reason: `expired at ${until}` })
          return
        }
        parseBannedInput(input, ctx.nowMs) // 107/108 now, not half-way through the writes
        writes.push(input)
      })
      return {
        counts: { blacklist: writes.length },
        skipped,
        notes: [],
        apply: async () => { for (const input of writes) await banned.add(input) }
      }
    }
  }
}

/** `who` of a banned entry: EMQ X 4.1+'s `{"clientid": "c1"}`, or 4.0's text `who` beside `as`. */
function whoOf (entry: Readonly<Record<string, unknown>>, where: string): { as: string, who: string } {
  const who = entry.who
  if (typeof who === 'string') return { as: requiredText(entry, 'as', where), who }
  if (typeof who === 'object' && who !== null && !Array.isArray(who)) {
    const keys = Object.keys(who)
    const key = keys[0]
    const value = (who as Record<string, unknown>)[key]
    if (keys.length === 1 && Object.hasOwn(WHO_KEYS, key) && typeof value === 'string') return { as: WHO_KEYS[key], who: value }
  }
  throw new WrongTypeError(`${where}.who must be one of {"clientid": ...}, {"username": ...}, {"peerhost": ...}, not ${describe(who)}`)
}

/** EMQ X 4's `acl_mnesia` actions in acl.conf's words. */
const ACL_ACTIONS: Readonly<Record<string, string>> = { pub: 'publish', sub: 'subscribe', pubsub: 'pubsub' }

/**
 * The `acl_mnesia` section (emqx_auth_mnesia's ACL table): Starling keeps its ACL in
 * `etc/acl.conf`, not in a table, so an import checks each entry and lists it as skipped with
 * the acl.conf rule that does the same; an export writes none.
 */
export function aclTableSection (): BackupSection {
  return {
    name: 'acl_mnesia',
    export: () => ({ acl_mnesia: [] }),
    check (file, ctx) {
      const skipped: SkippedEntry[] = []
      entriesOf(file, 'acl_mnesia').forEach((entry, i) => {
        const where = at('acl_mnesia', i)
        const topic = requiredText(entry, 'topic', where)
        const action = requiredText(entry, 'action', where)
        if (!Object.hasOwn(ACL_ACTIONS, action)) throw new WrongTypeError(`${where}.action must be pub, sub or pubsub, not ${describe(action)}`)
        let access: string
        let who: string
        if ('login' in entry) {
          // 4.0-4.2: {login, topic, action, allow}; the logins are what auth.mnesia.as says
          access = optionalBoolean(entry, 'allow', where, false) ? 'allow' : 'deny'
          const login = requiredText(entry, 'login', where)
          who = `{${ctx.env['auth.mnesia.as'] === 'clientid' ? 'client' : 'user'}, ${JSON.stringify(login)}}`
        } else {
          access = requiredText(entry, 'access', where)
          if (access !== 'allow' && access !== 'deny') throw new WrongTypeError(`${where}.access must be allow or deny, not ${describe(access)}`)
          const type = requiredText(entry, 'type', where)
          if (type === 'all') who = 'all'
          else if (type === 'clientid' || type === 'username') who = `{${type === 'clientid' ? 'client' : 'user'}, ${JSON.stringify(requiredText(entry, 'type_value', where))}}`
          else throw new WrongTypeError(`${where}.type must be clientid, username or all, not ${describe(type)}`)
        }
        const rule = `{${access}, ${who}, ${ACL_ACTIONS[action]}, [${JSON.stringify(topic)}]}.`
        skipped.push({ section: 'acl_mnesia', entry: `${who} ${action} ${topic}`, reason: `Starling has no ACL table; add this rule to etc/acl.conf: ${rule}` })
      })
      return { counts: { acl_mnesia: 0 }, skipped, notes: [], apply: async () => {} }
    }
  }
}
