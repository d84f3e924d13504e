import { parseStatement, SqlError } from '../../../rules/sql/index.js'
import type { Expr } from '../../../rules/sql/ast.js'

/** The WHERE of `SELECT * FROM "t/#" WHERE <cond>` as a compact S-expression. */
function where (cond: string): string {
  const ast = parseStatement(`SELECT * FROM "t/#" WHERE ${cond}`)
  return show(ast.where as Expr)
}

function show (e: Expr): string {
  switch (e.kind) {
    case 'const': return JSON.stringify(e.value)
    case 'var': return e.name
    case 'path': return `${show(e.root)}${e.steps.map(s => s.kind === 'key' ? `.${s.key}` : s.kind === 'range' ? `[${s.from}..${s.to}]` : `[${show(s.index)}]`).join('')}`
    case 'list': return `[${e.items.map(show).join(' ')}]`
    case 'seq': return `[${e.from}..${e.to}]`
    case 'neg': return `(- ${show(e.arg)})`
    case 'not': return `(not ${show(e.arg)})`
    case 'arith':
    case 'compare':
    case 'logic': return `(${e.op} ${show(e.left)} ${show(e.right)})`
    case 'in': return `(${e.negated ? 'not-in' : 'in'} ${show(e.arg)} ${e.items.map(show).join(' ')})`
    case 'case': return `(case ${e.subject === null ? '' : show(e.subject) + ' '}${e.whens.map(w => `${show(w.when)}->${show(w.then)}`).join(' ')}${e.otherwise === null ? '' : ' else ' + show(e.otherwise)})`
    case 'call': return `${e.name}(${e.args.map(show).join(' ')})`
  }
}

function errorOf (sql: string): SqlError {
  try {
    parseStatement(sql)
  } catch (err) {
    if (err instanceof SqlError) return err
    throw err
  }
  throw new Error(`no error for ${sql}`)
}

describe('rule SQL parser', () => {
  describe('precedence', () => {
    it.each([
      ['a + b * c', '(+ a (* b c))'],
      ['a * b + c', '(+ (* a b) c)'],
      ['a - b - c', '(- (- a b) c)'],
      ['a / b div c mod d', '(mod (div (/ a b) c) d)'],
      ['-a * b', '(* (- a) b)'],
      ['-(a + b)', '(- (+ a b))'],
      ['- 1 + 1', '(+ -1 1)'],
      ['a + b > c * d', '(> (+ a b) (* c d))'],
      ['a = 1 and b = 2 or c = 3', '(or (and (= a 1) (= b 2)) (= c 3))'],
      ['a = 1 or b = 2 and c = 3', '(or (= a 1) (and (= b 2) (= c 3)))'],
      ['not a = 1 and b', '(and (not (= a 1)) b)'],
      ['not not a', '(not (not a))'],
      ['(a or b) and c', '(and (or a b) c)'],
      ['x in (1, 2, 1 + 2)', '(in x 1 2 (+ 1 2))'],
      ['x not in (1)', '(not-in x 1)'],
      ['topic =~ \'t/#\' and qos >= 1', '(and (=~ topic "t/#") (>= qos 1))'],
      ['a <> b or a != b', '(or (<> a b) (!= a b))']
    ])('%s parses as %s', (cond, tree) => {
      expect(where(cond)).toBe(tree)
    })
  })

  describe('terms', () => {
    it.each([
      ['payload.a.b = 1', '(= payload.a.b 1)'],
      ['a[1].x = 1', '(= a[1].x 1)'],
      ['a[-1] = 1', '(= a[-1] 1)'],
      ['a[i] = 1', '(= a[i] 1)'],
      ['a[2..4] = b', '(= a[2..4] b)'],
      ['a[-3..-1] = b', '(= a[-3..-1] b)'],
      ["pub_props.'User-Property'.foo = 1", '(= pub_props.User-Property.foo 1)'],
      ["'User-Property'.foo = 1", '(= User-Property.foo 1)'],
      ['payload.select = payload.from', '(= payload.select payload.from)'],
      ['[1..3] = [1, 2, 3]', '(= [1..3] [1 2 3])'],
      ['[] = x', '(= [] x)'],
      ['x = "double"', '(= x double)'], // a double-quoted token is a name, as in EMQ X 4
      ["x = 'it''s'", '(= x "it\'s")'],
      ["x = 'it\\'s'", '(= x "it\'s")'],
      ["x = '^\\d+$'", '(= x "^\\\\d+$")'],
      ['x = 1.5e2', '(= x 150)'],
      ['x = TRUE and y = false', '(and (= x true) (= y false))'],
      ['md5(a) = lower(b)', '(= md5(a) lower(b))'],
      ['now_timestamp() > 0', '(> now_timestamp() 0)'],
      ['json_decode(payload).x = 1', '(= json_decode(payload).x 1)']
    ])('%s', (cond, tree) => {
      expect(where(cond)).toBe(tree)
    })

    it('reads both CASE forms', () => {
      expect(where('case when a > 0 then 1 when a < 0 then -1 else 0 end = 1'))
        .toBe('(= (case (> a 0)->1 (< a 0)->-1 else 0) 1)')
      expect(where('CASE x WHEN 1 THEN \'one\' END = \'one\'')).toBe('(= (case x 1->"one") "one")')
    })
  })

  describe('statements', () => {
    it('accepts keywords in any case and an optional semicolon', () => {
      const ast = parseStatement('sElEcT a As b FrOm "t/#" wHeRe a = 1;')
      expect(ast.kind).toBe('select')
      expect(ast.fields).toHaveLength(1)
      expect(ast.from.map(f => f.text)).toEqual(['t/#'])
    })

    it('keeps the AS target with keys and indexes', () => {
      const ast = parseStatement('SELECT 1 AS a.b[2].c, 2 AS l[0], 3 AS l[-0], 4 AS l[-2], 5 AS "quoted key" FROM "t"')
      const aliases = ast.fields.map(f => f.kind === 'expr' ? f.alias : null)
      expect(aliases).toEqual([
        [{ kind: 'key', key: 'a' }, { kind: 'key', key: 'b' }, { kind: 'index', index: 2 }, { kind: 'key', key: 'c' }],
        [{ kind: 'key', key: 'l' }, { kind: 'index', index: 'head' }],
        [{ kind: 'key', key: 'l' }, { kind: 'index', index: 'tail' }],
        [{ kind: 'key', key: 'l' }, { kind: 'index', index: -2 }],
        [{ kind: 'key', key: 'quoted key' }]
      ])
    })

    it('reads FOREACH with DO, INCASE, FROM and WHERE', () => {
      const ast = parseStatement('FOREACH payload.list AS x DO x.a AS a, * INCASE x.a > 1 FROM "t/1", "t/2" WHERE qos = 1')
      expect(ast.kind).toBe('foreach')
      expect(ast.fields).toHaveLength(1)
      expect(ast.doFields.map(f => f.kind)).toEqual(['expr', 'star'])
      expect(ast.incase).not.toBeNull()
      expect(ast.from.map(f => f.text)).toEqual(['t/1', 't/2'])
      expect(ast.where).not.toBeNull()
    })

    it('keeps the text of each field', () => {
      const ast = parseStatement('SELECT  upper( clientid ) , qos+1 FROM "t"')
      expect(ast.fields.map(f => f.kind === 'expr' ? f.text : '*')).toEqual(['upper( clientid )', 'qos+1'])
    })
  })

  describe('syntax errors name what was expected and where', () => {
    it.each([
      ['SELEC * FROM "t"', 'expected SELECT or FOREACH, found \'SELEC\' at 1:1'],
      ['SELECT * "t"', "expected ',' or FROM, found string \"t\" at 1:10"],
      ['SELECT * FROM t/#', 'expected an event or topic filter in double quotes after FROM, found \'t\' at 1:15'],
      ['SELECT a FROM "t" WHERE', 'expected an expression, found end of input at 1:24'],
      ['SELECT a FROM "t" WHERE a = ', 'expected an expression, found end of input at 1:29'],
      ['SELECT a FROM "t" LIMIT 1', "expected ',', WHERE or end of statement, found 'LIMIT' at 1:19"],
      ['SELECT a FROM "t" WHERE a = 1 b', "expected end of statement, found 'b' at 1:31"],
      ['SELECT (a FROM "t"', "expected ')', found FROM at 1:11"],
      ['SELECT f(a, FROM "t"', 'expected an expression, found FROM at 1:13'],
      ['SELECT f(a b) FROM "t"', "expected ',' or ')' in the arguments of f, found 'b' at 1:12"],
      ['SELECT a AS FROM "t"', 'expected a name after AS, found FROM at 1:13'],
      ['SELECT a. , b FROM "t"', "expected a key after '.', found ',' at 1:11"],
      ['SELECT a[1 FROM "t"', "expected ']', found FROM at 1:12"],
      ['SELECT CASE WHEN a THEN b FROM "t"', 'expected WHEN, ELSE or END, found FROM at 1:27'],
      ['SELECT CASE a END FROM "t"', 'expected WHEN, found END at 1:15'],
      ["SELECT 'abc FROM \"t\"", "unterminated string starting with ' at 1:8"],
      ['SELECT a # b FROM "t"', "expected ',' or FROM, found '#' at 1:10"],
      ['SELECT 12ab FROM "t"', "invalid number '12a' at 1:8"],
      ['FOREACH * FROM "t"', "'*' cannot be a FOREACH item; use DO * or no DO at 1:9"],
      ['FOREACH a DO b INCASE FROM "t"', 'expected an expression, found FROM at 1:23'],
      ['SELECT a\nFROM "t"\nWHERE a = = 1', 'expected an expression, found \'=\' at 3:11']
    ])('%j', (sql, message) => {
      const err = errorOf(sql)
      expect(err.message).toBe(message)
      expect(`${err.line}:${err.column}`).toBe(message.slice(message.lastIndexOf(' ') + 1))
    })
  })
})
