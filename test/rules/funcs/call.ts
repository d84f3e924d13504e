import { applyFunction, lookupFunction } from '../../../rules/funcs/index.js'

/** Calls a function by its SQL name as the compiler would: arity checked, the event's columns passed. */
export function callWith (columns: Record<string, unknown>, name: string, ...args: unknown[]): unknown {
  const f = lookupFunction(name)
  if (f === undefined) throw new Error(`unknown function ${name}`)
  if (args.length < f.minArgs || args.length > f.maxArgs) throw new Error(`${name} does not take ${args.length} arguments`)
  return applyFunction(f, args, columns)
}

/** {@link callWith} with no columns. */
export const call = (name: string, ...args: unknown[]): unknown => callWith({}, name, ...args)
