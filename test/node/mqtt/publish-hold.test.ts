/**
 * The hold of one publish (node/mqtt/publish-hold.ts): the router's emit completes once every
 * take was released, at once when none is left, never twice.
 */
import { PublishHold } from '../../../node/mqtt/publish-hold.js'

describe('PublishHold', () => {
  it('completes the publish when the last take is released, once', () => {
    const hold = new PublishHold()
    hold.take()
    hold.take()
    let done = 0
    hold.wait(() => { done++ })
    hold.release()
    expect(done).toBe(0)
    hold.release()
    expect(done).toBe(1)
    hold.release() // one too many: ignored
    expect(done).toBe(1)
  })

  it('completes at once when every take was released before the router waits', () => {
    const hold = new PublishHold()
    hold.take()
    hold.release()
    let done = 0
    hold.wait(() => { done++ })
    expect(done).toBe(1)
  })
})
