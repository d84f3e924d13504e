/**
 * Node.js's own floor for the bench's `latency` scenario: not a broker, a `net` server that
 * answers CONNECT, SUBSCRIBE and PINGREQ and copies every PUBLISH frame it reads, unchanged,
 * to every connection that has subscribed (no topic matching, no QoS 1 state beyond a
 * PUBACK). One write per subscriber per read, as a Node.js broker that batches per read
 * would make. Whatever tail this shows is the runtime's and the machine's, not a broker's.
 * Usage: `node dist/bench/brokers/bare-relay.js <port> [host]` (port 0: any free port, printed
 * on stdout), or as a bench broker: `--cmd "relay=node dist/bench/brokers/bare-relay.js {port}"`.
 */
import net from 'node:net'

const port = Number(process.argv[2] ?? 1883)
const host = process.argv[3] ?? '127.0.0.1'

const subscribers = new Set<net.Socket>()

function serve (socket: net.Socket): void {
  socket.setNoDelay(true)
  let pending: Buffer | null = null
  socket.on('data', (chunk: Buffer) => {
    const buf = pending === null ? chunk : Buffer.concat([pending, chunk])
    pending = null
    const publishes: Buffer[] = []
    let at = 0
    while (at < buf.length) {
      // fixed header and remaining length
      let length = 0
      let multiplier = 1
      let i = at + 1
      let complete = false
      while (i < buf.length && i < at + 5) {
        const byte = buf[i++]
        length += (byte & 0x7f) * multiplier
        multiplier *= 128
        if ((byte & 0x80) === 0) { complete = true; break }
      }
      if (!complete || i + length > buf.length) break
      const type = buf[at] >> 4
      const end = i + length
      if (type === 3) {
        publishes.push(buf.subarray(at, end))
        const qos = (buf[at] >> 1) & 3
        if (qos > 0) {
          const topicLength = buf.readUInt16BE(i)
          const id = buf.readUInt16BE(i + 2 + topicLength)
          socket.write(Buffer.from([0x40, 2, id >> 8, id & 0xff]))
        }
      } else if (type === 1) {
        socket.write(Buffer.from([0x20, 2, 0, 0]))
      } else if (type === 8) {
        const id = buf.readUInt16BE(i)
        socket.write(Buffer.from([0x90, 3, id >> 8, id & 0xff, 0]))
        subscribers.add(socket)
      } else if (type === 12) {
        socket.write(Buffer.from([0xd0, 0]))
      } else if (type === 14) {
        socket.end()
      }
      at = end
    }
    if (at < buf.length) pending = buf.subarray(at)
    if (publishes.length > 0) {
      const out = publishes.length === 1 ? publishes[0] : Buffer.concat(publishes)
      for (const s of subscribers) s.write(out)
    }
  })
  socket.on('error', () => { /* closed below */ })
  socket.on('close', () => subscribers.delete(socket))
}

const server = net.createServer(serve)
server.listen(port, host, () => {
  if (port === 0) console.log((server.address() as net.AddressInfo).port)
})

function shutdown (): void {
  server.close()
  process.exit(0)
}
process.on('SIGTERM', shutdown)
process.on('SIGINT', shutdown)
