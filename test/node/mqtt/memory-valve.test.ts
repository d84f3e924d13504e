/**
 * The memory valve (node/mqtt/memory-valve.ts): while reads wait for the node's read budget,
 * a growth of the Buffers' memory past VALVE_GROWTH makes a full collection; without
 * waiting reads, none.
 */
import { noteContention, valveCollections, valveWatching, VALVE_GROWTH } from '../../../node/mqtt/memory-valve.js'
import { waitFor } from '../../helpers/node.js'

/** Makes `bytes` of Buffers that are garbage at once (their memory stays until a collection). */
function garbage (bytes: number): void {
  for (let n = 0; n < bytes; n += 1 << 20) Buffer.alloc(1 << 20, 1)
}

it('looks at the memory only while reads wait, and collects when the Buffers grow past its limit', async () => {
  // nothing waits for the read budget: the valve does not even look
  expect(valveWatching()).toBe(false)
  const before = valveCollections()
  // reads waiting (noted as the read budget notes every refused read), Buffers made and dropped meanwhile
  const contention = setInterval(() => { noteContention(); garbage(VALVE_GROWTH / 8) }, 20)
  try {
    noteContention()
    expect(valveWatching()).toBe(true)
    await waitFor(() => valveCollections() > before, 'a collection', 10_000)
  } finally {
    clearInterval(contention)
  }
  // no read waited since its last look: it stops looking
  await waitFor(() => !valveWatching(), 'the valve to stop looking', 5000)
})
