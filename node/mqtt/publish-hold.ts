/**
 * Holding a publish's completion while a part makes the message safe elsewhere (a rule's data
 * action writing it into a disk buffer): the router's emit, and so the publisher's PUBACK
 * (QoS 1) or PUBREC (QoS 2), waits until every holder released it. The core's `sink` does the
 * same for parts that take messages as a route (a bridge's forwards); a hold takes no route,
 * so the cluster forwards nothing for it.
 *
 * Invariants:
 * - A hold exists only for a QoS 1/2 message published on this node, and only while its
 *   `message.publish` event is being dispatched (synchronously, inside the router's emit): a
 *   listener asks for it then or never. Nothing is allocated for a message nobody holds.
 * - Every `take` is matched by exactly one `release`; the emit completes when the count is
 *   back to 0 after `wait` (at once when nobody took it). A release never throws.
 * - Only the publisher is held (its read loop and its output, as for a slow subscriber);
 *   other clients and QoS 0 messages never wait for a hold.
 */

/** The hold of one message's publish (see the module's invariants). */
export class PublishHold {
  private count = 0
  private done: (() => void) | undefined

  /** Holds the publish once more; call {@link release} once when the message is safe (or failed). */
  take (): void {
    this.count++
  }

  /** Ends one {@link take}; the last one completes the publish. */
  readonly release = (): void => {
    if (this.count === 0) return
    if (--this.count === 0 && this.done !== undefined) {
      const done = this.done
      this.done = undefined
      done()
    }
  }

  /** Called by the router once: `done` runs when every take was released (now, if none is left). */
  wait (done: () => void): void {
    if (this.count === 0) done()
    else this.done = done
  }
}
