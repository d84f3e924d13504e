/**
 * A typed event with any number of listeners: how one part of a node tells the others that
 * something happened (a route key appeared, a session filter went away) without a field
 * another part assigns. `on` returns the function that removes the listener, so a part
 * that stops undoes exactly what it added.
 *
 * Invariants: listeners run synchronously, in the order they were added; a listener added
 * or removed while an event is delivered takes effect from the next event; `emit` with no
 * listener costs one length check (the router emits on every subscription change).
 */
export class Signal<Args extends unknown[]> {
  private listeners: ReadonlyArray<(...args: Args) => void> = []

  /** Adds `listener`; returns the function that removes it again. */
  on (listener: (...args: Args) => void): () => void {
    this.listeners = [...this.listeners, listener]
    return () => { this.listeners = this.listeners.filter(l => l !== listener) }
  }

  /** Calls every listener with `args`. */
  emit (...args: Args): void {
    const listeners = this.listeners
    for (let i = 0; i < listeners.length; i++) listeners[i](...args)
  }

  /** Whether anyone listens. */
  get listened (): boolean { return this.listeners.length > 0 }
}
