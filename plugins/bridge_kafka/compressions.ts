/** EMQ X 4.4's `compression` values of `bridge_kafka` that kafkajs has a codec for without another package (snappy needs one). */
export const COMPRESSIONS = ['no_compression', 'gzip'] as const
