/**
 * Arithmetic operators and math functions (EMQ X 4.4 `emqx_rule_funcs`, "Arithmetic Funcs"
 * and "Math Funcs"). Erlang's `math` module raises `badarith` where C returns NaN or an
 * infinity (domain errors, overflow); so do these, and the statement does not match.
 */
import { ConversionError } from './errors.js'
import { intArg, isBinary, isInt, isNum, numArg, termEquals, textOf } from './value-model.js'
import type { RuleFunction } from './types.js'

/** A float result, or `badarith` when Erlang would raise (NaN, infinity). */
function finite (fn: string, r: number): number {
  if (!Number.isFinite(r)) throw new ConversionError(fn, 'badarith', `result is ${r}`)
  return r
}

/** An integer result without a negative zero (Erlang integers have none). */
function integral (r: number): number {
  return r + 0
}

/** `erlang:round/1`: half away from zero (`round(-2.5)` is -3; JavaScript's Math.round gives -2). */
function erlangRound (x: number): number {
  return integral(x < 0 ? -Math.round(-x) : Math.round(x))
}

const unary = (name: string, op: (x: number) => number): RuleFunction => ({
  name,
  minArgs: 1,
  maxArgs: 1,
  fn: (x: unknown) => finite(name, op(numArg(name, x)))
})

const binary = (name: string, op: (x: number, y: number) => number): RuleFunction => ({
  name,
  minArgs: 2,
  maxArgs: 2,
  fn: (x: unknown, y: unknown) => finite(name, op(numArg(name, x), numArg(name, y)))
})

/**
 * The math functions of the spec's table. `ceil`, `floor` and `round` return integers; the
 * others floats. `abs` accepts floats too (EMQ X 4.4 has an `is_integer` guard on it, which
 * makes `abs(-1.5)` fail; we take that for a bug and do not copy it).
 */
export const mathFunctions: RuleFunction[] = [
  unary('abs', Math.abs),
  unary('acos', Math.acos),
  unary('acosh', Math.acosh),
  unary('asin', Math.asin),
  unary('asinh', Math.asinh),
  unary('atan', Math.atan),
  unary('atanh', Math.atanh),
  unary('ceil', (x) => integral(Math.ceil(x))),
  unary('cos', Math.cos),
  unary('cosh', Math.cosh),
  unary('exp', Math.exp),
  unary('floor', (x) => integral(Math.floor(x))),
  binary('fmod', (x, y) => x % y),
  unary('log', Math.log),
  unary('log10', Math.log10),
  unary('log2', Math.log2),
  binary('power', Math.pow),
  unary('round', erlangRound),
  unary('sin', Math.sin),
  unary('sinh', Math.sinh),
  unary('sqrt', Math.sqrt),
  unary('tan', Math.tan),
  unary('tanh', Math.tanh),
  {
    name: 'eq',
    minArgs: 2,
    maxArgs: 2,
    // Erlang `==`: numbers by value (one number type here), binaries by bytes, deep otherwise.
    fn: (x: unknown, y: unknown) => termEquals(x, y)
  }
]

/** `+` (EMQ X 4.4): numbers add; two strings concatenate; a number and a string is an error. */
export function plus (x: unknown, y: unknown): unknown {
  if (isNum(x) && isNum(y)) return finite('+', x + y)
  if (isBinary(x) && isBinary(y)) return textOf('+', x) + textOf('+', y)
  if ((isNum(x) && isBinary(y)) || (isBinary(x) && isNum(y))) {
    throw new ConversionError('+', 'unsupported_type_implicit_conversion', 'cannot add a number and a string; use str() or int()')
  }
  throw new ConversionError('+', 'unsupported_function_operator_type', 'operands must be numbers or strings')
}

function numbers (op: string, x: unknown, y: unknown): [number, number] {
  if (isNum(x) && isNum(y)) return [x, y]
  throw new ConversionError(op, 'unsupported_function_operator_type', 'operands must be numbers')
}

function integers (op: string, x: unknown, y: unknown): [number, number] {
  if (isInt(x) && isInt(y)) {
    if (y === 0) throw new ConversionError(op, 'badarith', 'division by zero')
    return [x, y]
  }
  throw new ConversionError(op, 'unsupported_function_operator_type', 'operands must be integers')
}

/**
 * The arithmetic operators as functions, for the compiler: `+ - *`, `/` (always a float in
 * EMQ X; division by zero fails), `div` (integer division truncating toward zero) and `mod`
 * (Erlang `rem`: the sign of the dividend, `-7 mod 2` is -1). Not callable by name from SQL.
 */
export const arithmeticOperators: RuleFunction[] = [
  { name: '+', minArgs: 2, maxArgs: 2, fn: plus },
  { name: '-', minArgs: 2, maxArgs: 2, fn: (x: unknown, y: unknown) => { const [a, b] = numbers('-', x, y); return finite('-', a - b) } },
  { name: '*', minArgs: 2, maxArgs: 2, fn: (x: unknown, y: unknown) => { const [a, b] = numbers('*', x, y); return finite('*', a * b) } },
  {
    name: '/',
    minArgs: 2,
    maxArgs: 2,
    fn: (x: unknown, y: unknown) => {
      const [a, b] = numbers('/', x, y)
      if (b === 0) throw new ConversionError('/', 'badarith', 'division by zero')
      return finite('/', a / b)
    }
  },
  { name: 'div', minArgs: 2, maxArgs: 2, fn: (x: unknown, y: unknown) => { const [a, b] = integers('div', x, y); return integral(Math.trunc(a / b)) } },
  { name: 'mod', minArgs: 2, maxArgs: 2, fn: (x: unknown, y: unknown) => { const [a, b] = integers('mod', x, y); return integral(a % b) } }
]

/** The bitwise functions on integers (`bnot band bor bxor bsl bsr`), exact beyond 32 bits. */
export const bitwiseFunctions: RuleFunction[] = [
  { name: 'bitnot', minArgs: 1, maxArgs: 1, fn: (x: unknown) => big(~BigInt(intArg('bitnot', x))) },
  { name: 'bitand', minArgs: 2, maxArgs: 2, fn: (x: unknown, y: unknown) => big(BigInt(intArg('bitand', x)) & BigInt(intArg('bitand', y))) },
  { name: 'bitor', minArgs: 2, maxArgs: 2, fn: (x: unknown, y: unknown) => big(BigInt(intArg('bitor', x)) | BigInt(intArg('bitor', y))) },
  { name: 'bitxor', minArgs: 2, maxArgs: 2, fn: (x: unknown, y: unknown) => big(BigInt(intArg('bitxor', x)) ^ BigInt(intArg('bitxor', y))) },
  { name: 'bitsl', minArgs: 2, maxArgs: 2, fn: (x: unknown, n: unknown) => shift('bitsl', x, n, 1) },
  { name: 'bitsr', minArgs: 2, maxArgs: 2, fn: (x: unknown, n: unknown) => shift('bitsr', x, n, -1) }
]

function shift (fn: string, x: unknown, n: unknown, dir: 1 | -1): number {
  const v = BigInt(intArg(fn, x))
  const by = intArg(fn, n) * dir
  if (by > 1024) throw new ConversionError(fn, 'system_limit', `shift by ${by} bits`)
  return big(by >= 0 ? v << BigInt(by) : v >> BigInt(-by))
}

function big (v: bigint): number {
  return Number(v)
}
