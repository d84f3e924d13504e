/**
 * The event maps of the EventEmitters an idle connection keeps (aedes' client, its parser):
 * how they are kept small for the connection's lifetime (issue 22, docs/performance.md).
 */

/**
 * Rebuilds `emitter`'s event map with V8's fast properties: an EventEmitter's map is made
 * with a null prototype (`{ __proto__: null }`), which V8 keeps as a dictionary (about 160 B
 * for aedes' client or parser, for the connection's lifetime), and a key deleted (a once
 * listener gone) does the same to any map. An object made with its keys and then given a
 * null prototype stays fast (about 30 B). Same keys, same listeners, same order; a key
 * deleted later makes it a dictionary again, as before.
 */
export function compactEvents (emitter: any): void {
  const events = emitter._events
  if (events === undefined || events === null || typeof events !== 'object') return
  const fresh: Record<string | symbol, unknown> = {}
  for (const key of Reflect.ownKeys(events)) fresh[key] = events[key]
  emitter._events = Object.setPrototypeOf(fresh, null)
}
