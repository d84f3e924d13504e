/**
 * bridge_kafka's `compression` (plugins/bridge_kafka/client.ts `kafkaCompression`): EMQ X 4.4's
 * values to kafkajs's types, and snappy's codec, which kafkajs does not ship, registered in
 * kafkajs's table as the producer and any consumer of the process use it. The produce path
 * against a real broker is test/e2e/data-kafka.test.ts's (with TEST_KAFKA_BROKERS).
 */
import kafkajs, { CompressionTypes } from 'kafkajs'
import { kafkaCompression } from '../../../plugins/bridge_kafka/client.js'

describe('bridge_kafka compression', () => {
  it('maps no_compression, gzip and snappy to kafkajs\'s types', async () => {
    expect(await kafkaCompression('no_compression')).toBe(CompressionTypes.None)
    expect(await kafkaCompression('gzip')).toBe(CompressionTypes.GZIP)
    expect(await kafkaCompression('snappy')).toBe(CompressionTypes.Snappy)
  })

  it('registers a snappy codec whose batches come back whole, also in the xerial framing Java clients write', async () => {
    await kafkaCompression('snappy')
    const codec = kafkajs.CompressionCodecs[CompressionTypes.Snappy]()
    const records = Buffer.from(JSON.stringify(Array.from({ length: 200 }, (_, i) => ({ clientid: `c${i % 7}`, temp: 20 + (i % 5) }))))
    const compressed: Buffer = await codec.compress({ buffer: records })
    expect(compressed.length).toBeLessThan(records.length)
    expect(await codec.decompress(compressed)).toEqual(records)
    // xerial: magic, version 1, compatible 1, then length-prefixed snappy blocks
    const half = records.length >> 1
    const blocks = await Promise.all([records.subarray(0, half), records.subarray(half)].map(async (b) => Buffer.from(await codec.compress({ buffer: b }))))
    const header = Buffer.from([130, 83, 78, 65, 80, 80, 89, 0, 0, 0, 0, 1, 0, 0, 0, 1])
    const framed = Buffer.concat([header, ...blocks.flatMap((b) => { const len = Buffer.alloc(4); len.writeUInt32BE(b.length); return [len, b] })])
    expect(await codec.decompress(framed)).toEqual(records)
  })
})
