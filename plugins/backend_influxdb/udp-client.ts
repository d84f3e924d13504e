/**
 * The UDP client of `backend_influxdb_udp`: line protocol in datagrams to InfluxDB's UDP
 * listener (`[[udp]]` in influxdb.conf), at most `batch_size` lines and
 * {@link MAX_DATAGRAM_BYTES} bytes each, timestamps in the resource's `precision` (which must
 * be the listener's: a datagram carries no unit).
 *
 * What UDP guarantees (docs/integrations.md): nothing past the local socket. A write succeeds
 * once every datagram was handed to the kernel; InfluxDB sends no answer, so a datagram lost
 * on the way, dropped by a full receive buffer, sent while the server was down, or holding a
 * line the server refuses is lost without a trace and still counted as success. A send error
 * the kernel reports (no route, the port unreachable as an earlier datagram found out) is
 * transient: the write is sent again once the socket is open again.
 */
import { createSocket, type Socket } from 'node:dgram'
import { lookup } from 'node:dns/promises'
import { WriteRefused, type DataClient } from '../kit/data/index.js'
import { lineOf, influxWrites, type InfluxWrite } from './write.js'
import type { Precision } from './line-protocol.js'

/** Most bytes of one datagram (InfluxDB's UDP listener reads up to 64 KiB). */
export const MAX_DATAGRAM_BYTES = 65_000

/** A UDP resource's settings. */
export interface InfluxUdpSettings {
  host: string
  port: number
  /** Most lines per datagram. */
  batchSize: number
  precision: Precision
}

/** The datagrams of `lines`, in order (a line longer than a datagram is refused). */
export function datagramsOf (lines: readonly string[], batchSize: number, maxBytes = MAX_DATAGRAM_BYTES): Buffer[] {
  const out: Buffer[] = []
  let current: Buffer[] = []
  let bytes = 0
  for (const line of lines) {
    const b = Buffer.from(line, 'utf8')
    if (b.length > maxBytes) throw new WriteRefused(`a line of ${b.length} bytes does not fit in one UDP datagram (at most ${maxBytes})`)
    const added = (current.length > 0 ? 1 : 0) + b.length
    if (current.length >= batchSize || bytes + added > maxBytes) {
      out.push(Buffer.from(current.map((c) => c.toString('utf8')).join('\n'), 'utf8'))
      current = []
      bytes = 0
    }
    bytes += (current.length > 0 ? 1 : 0) + b.length
    current.push(b)
  }
  if (current.length > 0) out.push(Buffer.from(current.map((c) => c.toString('utf8')).join('\n'), 'utf8'))
  return out
}

/** A {@link DataClient} sending to InfluxDB's UDP listener (see the module comment). */
export function influxUdpClient (s: InfluxUdpSettings): DataClient<InfluxWrite> {
  let socket: Socket | undefined
  const address = `influxdb udp://${s.host}:${s.port}`
  const drop = (): void => {
    const old = socket
    socket = undefined
    try {
      old?.close()
    } catch {
      // already closed by the error that dropped it
    }
  }
  return {
    address,
    async connect () {
      drop()
      const { address: ip, family } = await lookup(s.host)
      const sock = createSocket(family === 6 ? 'udp6' : 'udp4')
      // an error the kernel reports later (ICMP port unreachable) closes this socket; the next connect opens another
      sock.on('error', () => { if (socket === sock) drop() })
      await new Promise<void>((resolve, reject) => {
        sock.once('error', reject)
        sock.connect(s.port, ip, () => { sock.off('error', reject); resolve() })
      })
      socket = sock
    },
    // no answer to check: alive while the socket is open
    alive: async () => socket !== undefined,
    async write (writes) {
      const sock = socket
      if (sock === undefined) throw new Error(`${address}: the socket is not open`)
      const lines = writes.flatMap((w) => w.p.map((p) => lineOf(p, s.precision, s.precision)))
      for (const datagram of datagramsOf(lines, s.batchSize)) {
        await new Promise<void>((resolve, reject) => {
          sock.send(datagram, (err) => { if (err === null || err === undefined) resolve(); else reject(err) })
        }).catch((err: Error) => {
          if (socket === sock) drop()
          throw new Error(`${address}: ${err.message}`)
        })
      }
    },
    ...influxWrites,
    close: async () => { drop() }
  }
}
