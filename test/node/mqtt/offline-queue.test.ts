/**
 * The QoS 0 queueing of away persistent sessions (node/mqtt/offline-queue.ts): which sessions a
 * message is queued for, by filter, QoS, No Local and presence.
 */
import { OfflineQueue } from '../../../node/mqtt/offline-queue.js'
import type { QueueTarget } from '../../../node/mqtt/persistence-outgoing.js'

/** A queue whose target records what it is asked to queue; `online` lists connected sessions. */
function queueWith (online: string[] = [], storeQos0 = true): { queue: OfflineQueue, queued: QueueTarget[][] } {
  const queued: QueueTarget[][] = []
  const queue = new OfflineQueue()
  queue.target = {
    storeQos0: () => storeQos0,
    online: (id) => online.includes(id),
    enqueue: async (targets) => { queued.push(targets) },
    wasQueued: () => false,
    failed: () => {}
  }
  return { queue, queued }
}

const msg = (topic: string, qos = 0, clientId = 'publisher'): any => ({ topic, qos, clientId })

describe('OfflineQueue', () => {
  it('queues a QoS 0 message for every away session whose filter matches, once per session', () => {
    const { queue, queued } = queueWith()
    queue.add('exact', 'a/b', { qos: 1 })
    queue.add('plus', 'a/+', { qos: 0 })
    queue.add('hash', 'a/#', { qos: 2, rap: true })
    queue.add('root', '#', { qos: 0 })
    queue.add('overlap', 'a/b', { qos: 0 })
    queue.add('overlap', 'a/#', { qos: 0 })
    queue.add('other', 'c/d', { qos: 0 })
    expect(queue.enqueue(msg('a/b'))).toBe(true)
    expect(queued[0].map(t => t.clientId).sort()).toEqual(['exact', 'hash', 'overlap', 'plus', 'root'])
    expect(queued[0].every(t => t.qos === 0)).toBe(true)
    expect(queued[0].find(t => t.clientId === 'hash')).toMatchObject({ topic: 'a/#', rap: true })
  })

  it('queues a QoS 1/2 message only for QoS 0 subscriptions (aedes queues the others)', () => {
    const { queue, queued } = queueWith()
    queue.add('sub0', 't', { qos: 0 })
    queue.add('sub1', 't', { qos: 1 })
    expect(queue.enqueue(msg('t', 1))).toBe(true)
    expect(queued[0].map(t => t.clientId)).toEqual(['sub0'])
  })

  it('skips connected sessions, No Local, shared subscriptions, $ topics under wildcards and removed filters', () => {
    const { queue, queued } = queueWith(['here'])
    queue.add('here', 'x', { qos: 0 })
    queue.add('self', 'x', { qos: 0, nl: true })
    queue.add('group', '$share/g/x', { qos: 0 })
    queue.add('gone', 'x', { qos: 0 })
    queue.remove('gone', 'x')
    queue.add('wild', '#', { qos: 0 })
    expect(queue.enqueue(msg('x', 0, 'self'))).toBe(true)
    expect(queued[0].map(t => t.clientId)).toEqual(['wild'])
    expect(queue.enqueue(msg('$SYS/x'))).toBe(false)
    expect(queue.size).toBe(3)
  })

  it('queues nothing while mqtt.mqueue_store_qos0 is off', () => {
    const { queue, queued } = queueWith([], false)
    queue.add('s', 't', { qos: 0 })
    expect(queue.enqueue(msg('t'))).toBe(false)
    expect(queued).toEqual([])
  })
})

describe('OfflineQueue removal', () => {
  it('prunes the branches removed filters leave empty, keeping the ones still used', () => {
    const { queue, queued } = queueWith()
    queue.add('a', 'p/q/r', { qos: 0 })
    queue.add('b', 'p/q', { qos: 0 })
    queue.remove('a', 'p/q/r')
    queue.remove('a', 'p/q/r') // twice: nothing more happens
    expect(queue.size).toBe(1)
    expect((queue as any).root.children.get('p').children.get('q').children.size).toBe(0)
    expect(queue.enqueue(msg('p/q'))).toBe(true)
    expect(queued[0].map(t => t.clientId)).toEqual(['b'])
    queue.remove('b', 'p/q')
    expect((queue as any).root.children.size).toBe(0)
  })
})
