import { WrongTypeError } from '../node/errors.js'

/** Default `_limit` (spec: not shown; EMQ X 4 used 10000). */
export const DEFAULT_LIMIT = 10000

/** Pagination of a list endpoint (spec: Pagination). */
export interface Page { page: number, limit: number }

function positiveInt (name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new WrongTypeError(`${name} must be a positive integer, got '${value}'`)
  return Number(value)
}

/** Reads `_page` (default 1) and `_limit` (default 10000) from a query. */
export function pageOf (query: Record<string, string | undefined>): Page {
  return { page: positiveInt('_page', query._page, 1), limit: positiveInt('_limit', query._limit, DEFAULT_LIMIT) }
}

/** One page of `items` with the spec's meta `{page, limit, count}` (count = all items). */
export function paginate<T> (items: T[], query: Record<string, string | undefined>): { data: T[], meta: { page: number, limit: number, count: number } } {
  const { page, limit } = pageOf(query)
  const start = (page - 1) * limit
  return { data: items.slice(start, start + limit), meta: { page, limit, count: items.length } }
}
