import type { Wire } from './wire.js'

/** Who published a QoS 1/2 message delivered to a connection, kept until its acknowledgement. */
export interface PublisherNote {
  topic: string
  payload: Buffer
  clientId: string | undefined
  username: string | undefined
}

/** Notes kept per connection at most; past it the oldest goes (a delivery whose frame went out as QoS 0 is never acknowledged). */
export const MAX_NOTES_PER_WIRE = 256

/**
 * The publishers of the QoS 1/2 messages on their way to each connection, for
 * `message.acked` (EMQ X 4's `from_client_id`, `from_username`). The wire reads an
 * acknowledged message back from the frame it sent, which names no publisher; the forward
 * filter notes the publisher of each delivery while someone listens to `message.acked`, and
 * the acknowledgement takes the first note of the same topic and payload bytes.
 *
 * Invariants: notes live in a WeakMap by wire, so they go with the connection; at most
 * {@link MAX_NOTES_PER_WIRE} per connection. Two messages of one topic and payload to the
 * same connection are told apart by order only, so the publisher of such a pair may be
 * swapped: never the topic or the payload.
 */
export class AckPublishers {
  private readonly notes = new WeakMap<Wire, PublisherNote[]>()

  /** Notes the publisher of a delivery to `wire`. */
  note (wire: Wire, note: PublisherNote): void {
    let list = this.notes.get(wire)
    if (list === undefined) this.notes.set(wire, list = [])
    if (list.length >= MAX_NOTES_PER_WIRE) list.shift()
    list.push(note)
  }

  /**
   * Takes the note of an acknowledged message sent as `topic` (empty when sent with a topic
   * alias) and `payload`, or undefined when none was noted.
   */
  take (wire: Wire, topic: string, payload: Buffer): PublisherNote | undefined {
    const list = this.notes.get(wire)
    if (list === undefined) return undefined
    for (let i = 0; i < list.length; i++) {
      const n = list[i]
      if ((topic === '' || n.topic === topic) && n.payload.equals(payload)) {
        list.splice(i, 1)
        return n
      }
    }
    return undefined
  }
}
