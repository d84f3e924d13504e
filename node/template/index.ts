/**
 * The one template module (docs/architecture.md): `${key}` placeholders filled from selected
 * data (values.ts: text, JSON templates), SQL compiled into bound parameters (sql.ts) and
 * commands split into arguments before filling (argv.ts). The rule engine's actions and the
 * auth backends (with their `%u` syntax) both build on it.
 */
export { compileText, fillString, fillTemplate, fillText, hasPlaceholder, lookup, renderText, renderValue, type TextTemplate } from './values.js'
export { compileSql, renderSql, DOLLAR_BRACES, type CompileSqlOptions, type PlaceholderSyntax, type SqlDialect, type SqlQuery, type SqlTemplate } from './sql.js'
export { compileArgv, renderArgv, type ArgvTemplate } from './argv.js'
