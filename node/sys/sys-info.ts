/**
 * The node's descriptive texts as EMQ X 4 wrote them (`emqx_sys`): uptime in words, local
 * date and time, the system description. `$SYS/brokers/<node>/uptime|datetime|sysdescr`
 * publish them, and the nodes API reports the same texts.
 */

/** `sysdescr`: what the broker is (EMQ X: its application description, `EMQ X Broker`). */
export const SYSDESCR = 'Starling MQTT Broker'

/**
 * Uptime in EMQ X's words: `5 seconds`, `2 minutes, 5 seconds`, `1 hours, 0 minutes, 5 seconds`,
 * and with days `3 days,1 hours, 0 minutes, 5 seconds` — EMQ X writes no space after
 * `days,` and always the plural; we keep both quirks so dashboards parse the same text.
 */
export function formatUptime (ms: number): string {
  const secs = Math.max(0, Math.floor(ms / 1000))
  if (secs < 60) return `${secs} seconds`
  return minutesText(Math.floor(secs / 60)) + `${secs % 60} seconds`
}

function minutesText (m: number): string {
  if (m < 60) return `${m} minutes, `
  return hoursText(Math.floor(m / 60)) + `${m % 60} minutes, `
}

function hoursText (h: number): string {
  if (h < 24) return `${h} hours, `
  return `${Math.floor(h / 24)} days,` + `${h % 24} hours, `
}

/** Local date and time as `YYYY-MM-DD HH:MM:SS` (the spec's text timestamp format). */
export function formatDatetime (date: Date = new Date()): string {
  const p = (n: number): string => String(n).padStart(2, '0')
  return `${String(date.getFullYear()).padStart(4, '0')}-${p(date.getMonth() + 1)}-${p(date.getDate())} ` +
    `${p(date.getHours())}:${p(date.getMinutes())}:${p(date.getSeconds())}`
}
