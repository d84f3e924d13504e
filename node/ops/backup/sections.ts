/**
 * The sections of a data backup (EMQ X 4.4's `emqx_mgmt_data_backup` JSON: `rules`,
 * `resources`, `schemas`, `blacklist`, `apps`, `users`, `auth_clientid`, `auth_username`,
 * `auth_mnesia`, `acl_mnesia`). Each table's owner adds the section it keeps: the core its
 * applications and banned list (node/ops/backup/core-sections.ts), the rule engine its
 * rules, resources and schemas, svc_auth_* the credential tables, svc_dashboard its users.
 * The backup service (backup-service.ts) knows none of them: it asks every section.
 *
 * Invariant of an import: every section's `check` runs, on the whole file, before any
 * section's `apply`; `check` writes nothing and throws (a catalogue error, 107/108) for a
 * malformed entry, so a malformed file changes nothing. An entry that is well formed but that
 * Starling cannot take (an Enterprise resource type, a rule bound to it) is not an error: the
 * section lists it in `skipped` and imports the rest.
 */

/** What an import is told besides the file. */
export interface ImportContext {
  /** The file's `version` (`4.0` ... `4.4`), as text. */
  version: string
  /**
   * EMQ X's `--env` overrides: `auth.mnesia.as` (`username` or `clientid`) says what the
   * logins of a 4.0-4.2 `auth_mnesia` table were.
   */
  env: Readonly<Record<string, string>>
  /** Now, in ms since the epoch. */
  nowMs: number
}

/** What an export is told. */
export interface ExportContext {
  /** Credentials in resource configs and action params in clear (`--with-secrets`); else masked. */
  withSecrets: boolean
}

/** An entry that was not imported, and why. */
export interface SkippedEntry {
  /** The file's key (`resources`, `acl_mnesia` ...). */
  section: string
  /** The entry's id, login or name. */
  entry: string
  reason: string
}

/** What a section's check found: its counts, what it skips and notes, and the writes to make. */
export interface SectionPlan {
  /** Entries to import, by the file's key. */
  counts: Record<string, number>
  skipped: SkippedEntry[]
  /** Remarks for the operator (an assumption made, what to do by hand). */
  notes: string[]
  /** Makes the writes; runs only once every section's check passed. */
  apply: () => Promise<void>
}

/** One section of the backup, added by the owner of its tables. */
export interface BackupSection {
  /** For messages and the order: `core`, `rule_engine`, `svc_auth`, `svc_dashboard`. */
  name: string
  /** Lower first: resources before the rules bound to them (default 0). */
  order?: number
  /** The file's keys this section writes, with their entries. */
  export: (ctx: ExportContext) => Record<string, unknown[]>
  /** Validates the file's entries for its keys; throws for a malformed one; writes nothing. */
  check: (file: Readonly<Record<string, unknown>>, ctx: ImportContext) => SectionPlan | Promise<SectionPlan>
}

/** The sections of a node, in the order they are exported and imported. */
export interface BackupSections {
  /** Adds a section; returns the function that removes it. */
  add: (section: BackupSection) => () => void
  list: () => BackupSection[]
}

/** An empty list of sections (the node's services hold one). */
export function createBackupSections (): BackupSections {
  const sections: BackupSection[] = []
  return {
    add (section) {
      if (sections.some(s => s.name === section.name)) throw new Error(`backup section ${section.name} is added twice`)
      sections.push(section)
      return () => {
        const at = sections.indexOf(section)
        if (at !== -1) sections.splice(at, 1)
      }
    },
    list: () => [...sections].sort((a, b) => (a.order ?? 0) - (b.order ?? 0))
  }
}
