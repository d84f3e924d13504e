/**
 * The republish loop guard. A message the republish action publishes is marked with the
 * chain of rules it went through (its triggering message's chain plus the republishing
 * rule); the runtime skips a rule for an event whose message carries that rule in its chain.
 * So `SELECT * FROM "t2"` republishing to `t2` delivers the original and one copy, and
 * longer cycles (t1 -> t2 -> t1) stop too, while other rules still see republished messages.
 *
 * How a mark travels: aedes keeps the payload `Buffer` object from the publish to each
 * subscriber's copy, so publish, deliver and dropped events are recognised by the payload's
 * identity (a WeakMap: marks go away with the message). `message.acked` reports the bytes
 * read back from the wire, so a republished message is also remembered by topic and payload
 * for {@link CONTENT_TTL_MS}, bounded to {@link MAX_CONTENT_MARKS} entries, and only while a
 * rule listens to acked events. A message that went through the store (offline session)
 * loses its mark.
 *
 * EMQ X 4 put the republishing action's id in the message headers (`republish_by`) and its
 * republish action refused to republish a message it had published itself.
 */

/** How long a republished message is recognised by content, for `message.acked`. */
export const CONTENT_TTL_MS = 60_000
/** At most this many content marks are kept; the oldest are dropped first. */
export const MAX_CONTENT_MARKS = 10_000
/** Payloads longer than this are not remembered by content. */
const MAX_CONTENT_BYTES = 64 * 1024

/** The marks of one rule engine. */
export class RepublishMarks {
  private readonly byPayload = new WeakMap<Buffer, readonly string[]>()
  private readonly byContent = new Map<string, { chain: readonly string[], expires: number }>()
  /** Set by the runtime: whether some enabled rule listens to `message.acked`. */
  rememberContent = false

  /** Marks a message about to be published with `chain` (rule ids, oldest first). */
  mark (topic: string, payload: Buffer, chain: readonly string[]): void {
    this.byPayload.set(payload, chain)
    if (!this.rememberContent || payload.length > MAX_CONTENT_BYTES) return
    const key = contentKey(topic, payload)
    this.byContent.delete(key)
    this.byContent.set(key, { chain, expires: Date.now() + CONTENT_TTL_MS })
    if (this.byContent.size > MAX_CONTENT_MARKS) this.byContent.delete(this.byContent.keys().next().value as string)
  }

  /** The chain of a message seen by a publish, deliver or dropped event, if it was republished. */
  chainOf (payload: Buffer): readonly string[] | undefined {
    return this.byPayload.get(payload)
  }

  /** The chain of an acknowledged message (by topic and payload). */
  chainOfAcked (topic: string, payload: Buffer): readonly string[] | undefined {
    const byIdentity = this.byPayload.get(payload)
    if (byIdentity !== undefined || this.byContent.size === 0) return byIdentity
    const key = contentKey(topic, payload)
    const mark = this.byContent.get(key)
    if (mark === undefined) return undefined
    if (mark.expires < Date.now()) {
      this.byContent.delete(key)
      return undefined
    }
    return mark.chain
  }

  /** Forgets the content marks (the runtime stops). */
  clear (): void {
    this.byContent.clear()
  }
}

function contentKey (topic: string, payload: Buffer): string {
  return topic + '\u0000' + payload.toString('latin1')
}
