/** kafkajs-snappy ships no types: a factory of kafkajs's codec shape (compress an encoder's buffer, decompress a buffer). */
declare module 'kafkajs-snappy' {
  const SnappyCodec: () => {
    compress: (encoder: { buffer: Buffer }) => Promise<Buffer>
    decompress: (buffer: Buffer) => Promise<Buffer>
  }
  export default SnappyCodec
}
