/**
 * EMQ X 4.4's `compression` values of `bridge_kafka`. kafkajs has gzip's codec itself; snappy's
 * is kafkajs-snappy (pure JavaScript, snappyjs), registered when a resource asks for it.
 */
export const COMPRESSIONS = ['no_compression', 'gzip', 'snappy'] as const

/** One of {@link COMPRESSIONS}. */
export type Compression = typeof COMPRESSIONS[number]
