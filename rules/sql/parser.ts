/**
 * Statements of the rule SQL (spec: Rule SQL; EMQ X 4 `rulesql`):
 *
 * ```
 * SELECT <fields> FROM <from> [WHERE <cond>]
 * FOREACH <fields> [DO <fields>] [INCASE <cond>] FROM <from> [WHERE <cond>]
 * <fields> := <field> {, <field>}      <field> := * | <expr> [AS <target>]
 * <target> := name {.key | [n] | [-n] | [0] | [-0] | [<expr>]}
 * <from>   := "quoted" {, "quoted"}
 * ```
 *
 * In a FOREACH list the last field is the collection (an array; anything else is empty);
 * earlier fields are helpers that later ones and WHERE can read. `AS x[0]` prepends to the
 * array `x` and `AS x[-0]` appends to it.
 */
import type { AliasStep, Field, FromItem, Statement } from './ast.js'
import { Cursor } from './cursor.js'
import { tokenize } from './lexer.js'
import { checkExpressionDepth } from './limits.js'
import { acceptSignedInt, parseExpr, parseKey } from './parse-expr.js'

/**
 * Parses one statement; throws {@link SqlError} naming what was expected and where, or which
 * depth limit (limits.ts) a statement nested too deeply passes.
 */
export function parseStatement (sql: string): Statement {
  const c = new Cursor(sql, tokenize(sql))
  let kind: Statement['kind']
  let fields: Field[]
  let doFields: Field[] = []
  let incase: Statement['incase'] = null
  if (c.acceptKw('select')) {
    kind = 'select'
    fields = parseFields(c, true)
  } else if (c.acceptKw('foreach')) {
    kind = 'foreach'
    fields = parseFields(c, false)
    if (c.acceptKw('do')) doFields = parseFields(c, true)
    if (c.acceptKw('incase')) incase = parseExpr(c)
  } else {
    return c.fail('SELECT or FOREACH')
  }
  if (!c.isKw('from')) c.fail(kind === 'select' ? "',' or FROM" : "',', DO, INCASE or FROM")
  c.next()
  const from = parseFrom(c)
  const where = c.acceptKw('where') ? parseExpr(c) : null
  c.acceptPunct(';')
  if (c.peek().kind !== 'eof') c.fail(where === null ? "',', WHERE or end of statement" : 'end of statement')
  const statement: Statement = { kind, fields, doFields, incase, from, where }
  checkExpressionDepth(statement, sql)
  return statement
}

function parseFields (c: Cursor, allowStar: boolean): Field[] {
  const fields: Field[] = []
  do fields.push(parseField(c, allowStar)); while (c.acceptPunct(','))
  return fields
}

function parseField (c: Cursor, allowStar: boolean): Field {
  const start = c.peek().offset
  if (c.isPunct('*')) {
    if (!allowStar) c.failAt("'*' cannot be a FOREACH item; use DO * or no DO", start)
    c.next()
    return { kind: 'star', at: start }
  }
  const expr = parseExpr(c)
  const text = c.sql.slice(start, c.lastEnd)
  // AS is optional before the alias (EMQ X 4: `scalar_exp path_ref`): `SELECT qos q`
  const alias = c.acceptKw('as') || aliasAhead(c) ? parseAlias(c) : null
  return { kind: 'expr', expr, alias, text, at: start }
}

/** True when the next token is a name that can only be an alias (`qos q`, `qos "q"`). */
function aliasAhead (c: Cursor): boolean {
  const t = c.peek()
  return t.kind === 'ident' || (t.kind === 'string' && t.quote === '"')
}

/** The target after AS: a name, then keys and indexes. */
function parseAlias (c: Cursor): AliasStep[] {
  const t = c.peek()
  if (t.kind !== 'ident' && t.kind !== 'string') c.fail('a name after AS')
  c.next()
  const steps: AliasStep[] = [{ kind: 'key', key: t.kind === 'string' ? t.text : t.raw }]
  for (;;) {
    if (c.acceptPunct('.')) {
      steps.push({ kind: 'key', key: parseKey(c) })
    } else if (c.acceptPunct('[')) {
      const n = acceptSignedInt(c)
      if (n !== null) {
        steps.push({ kind: 'index', index: n.value === 0 ? (n.negative ? 'tail' : 'head') : n.value })
      } else {
        steps.push({ kind: 'dynindex', index: parseExpr(c) })
      }
      c.expectPunct(']')
    } else {
      return steps
    }
  }
}

/** True when the name at the cursor is a whole FROM item (`FROM t1, t2 WHERE ...`). */
function bareTopicEnds (c: Cursor): boolean {
  const n = c.peek(1)
  return n.kind === 'eof' || c.isKw('where', 1) || c.isPunct(',', 1) || c.isPunct(';', 1)
}

function parseFrom (c: Cursor): FromItem[] {
  const items: FromItem[] = []
  do {
    const t = c.peek()
    // a bare name is a topic too (EMQ X 4: FROM takes a NAME, quoted or not); `t/#` is not one
    if (t.kind !== 'string' && !(t.kind === 'ident' && bareTopicEnds(c))) c.fail('an event or topic filter in double quotes after FROM')
    c.next()
    items.push({ text: t.kind === 'ident' ? t.raw : t.text, at: t.offset })
  } while (c.acceptPunct(','))
  return items
}
