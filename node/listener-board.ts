/**
 * Listeners of the layers above the core (the management API's `http:management`, later the
 * dashboard and gateways) as the listeners API and `starling-ctl listeners` report them,
 * after the MQTT listeners. A part adds a reporter when its listener starts and removes it
 * when the listener stops; the core asks the reporters when it is asked, never the part.
 */
import type { ListenerInfo } from './mqtt/listeners.js'

/** The reporters of the listeners beyond MQTT's, in the order they were added. */
export class ListenerBoard {
  private readonly reporters = new Set<() => ListenerInfo>()

  /** Adds a listener's reporter; returns the function that removes it. */
  add (report: () => ListenerInfo): () => void {
    this.reporters.add(report)
    return () => { this.reporters.delete(report) }
  }

  /** What each listener reports now. */
  list (): ListenerInfo[] {
    return [...this.reporters].map(report => report())
  }
}
