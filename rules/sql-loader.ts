/**
 * The rule SQL compiler (rules/sql/, with the function table of rules/funcs/), loaded at its
 * first use instead of with every node (issue 22, idle memory: the parser, the compiler and
 * the function table are about 12 MB of an idle node's memory, and a node without rules never
 * uses them). The rule engine loads it before it compiles the stored rules at start, and the
 * rule service before it compiles a rule created here or on another node; the SQL tester
 * loads it for its test.
 *
 * Loading it also installs the schema registry's `schema_encode`/`schema_decode` in the
 * function table, so that no rule can compile before they are there (a compiled rule keeps
 * the function it resolved; rules/schemas/functions.ts).
 *
 * The loaded module is kept here, once per process, as the module loader itself keeps it:
 * it is code, not a node's state (nodes in one process share it as they share every import).
 */
type SqlModule = typeof import('./sql/index.js')

let loaded: SqlModule | undefined
let loading: Promise<SqlModule> | undefined

/** The rule SQL module, imported (and the schema functions installed) on the first call. */
export async function loadSql (): Promise<SqlModule> {
  if (loaded !== undefined) return loaded
  // one import after the other: both reach rules/funcs/, and jest's module linker (the tests)
  // fails on two concurrent dynamic imports of a shared module
  loading ??= (async () => {
    const sql = await import('./sql/index.js')
    ;(await import('./schemas/functions.js')).installSchemaFunctions()
    loaded = sql
    return sql
  })()
  return await loading
}

/**
 * The rule SQL module once {@link loadSql} resolved. Throws before: a caller that compiles
 * synchronously (the rule service's stored rules) awaits {@link loadSql} first.
 */
export function loadedSql (): SqlModule {
  if (loaded === undefined) throw new Error('the rule SQL compiler is not loaded yet: await loadSql() before compiling a rule')
  return loaded
}
