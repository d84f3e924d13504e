/**
 * Runs async operations one at a time, in call order: the rule and resource services share
 * one, so a rule being bound to a resource and that resource being deleted cannot interleave.
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve()

  /** Runs `fn` after every operation queued before it; its result or error is returned. */
  async run<T> (fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn)
    this.tail = run.catch(() => undefined)
    return await run
  }
}
