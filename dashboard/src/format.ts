/** How figures are written on the pages. */

/** Bytes as B, KB, MB, GB (1024). */
export function bytes (n: number | string | undefined): string {
  if (typeof n === 'string') return n
  if (n === undefined || !Number.isFinite(n)) return '-'
  const units = ['B', 'KB', 'MB', 'GB', 'TB']
  let v = n
  let u = 0
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++ }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`
}

/** A count with thousands separators. */
export function count (n: number | undefined): string {
  return n === undefined || !Number.isFinite(n) ? '-' : n.toLocaleString('en')
}

/** A time (seconds or milliseconds since the epoch, or an ISO/"YYYY-MM-DD HH:MM:SS" string) in the browser's time zone. */
export function time (t: number | string | undefined | null): string {
  if (t === undefined || t === null || t === '') return '-'
  if (typeof t === 'string') return t
  const ms = t < 1e12 ? t * 1000 : t
  return new Date(ms).toLocaleString('en-GB')
}
