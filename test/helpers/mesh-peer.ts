/**
 * A libp2p peer speaking the cluster link protocol by hand (cluster/mesh.ts), for tests that
 * send a node frames no Starling node would (test/cluster/link-input-checks.test.ts) or the
 * hello of another release (test/cluster/mesh-version.test.ts).
 */
import { createLibp2p } from 'libp2p'
import { tcp } from '@libp2p/tcp'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { preSharedKey } from '@libp2p/pnet'
import { Packr, Unpackr } from 'msgpackr'
import { pskFromCookie } from '../../cluster/mesh.js'
import type { TestNode } from './node.js'

const packr = new Packr({ useRecords: false, moreTypes: false })
const unpackr = new Unpackr({ useRecords: false, moreTypes: false })

/** One link frame: a 4-byte length, the MessagePack type byte, the body. */
export function frame (value: unknown): Uint8Array {
  const body = packr.pack(value)
  const head = Buffer.alloc(5)
  head.writeUInt32BE(body.length, 0)
  return Buffer.concat([head, body])
}

/** The MessagePack frames in `bytes` (whole frames only), decoded. */
export function readFrames (bytes: Buffer): unknown[] {
  const out: unknown[] = []
  let at = 0
  while (at + 5 <= bytes.length) {
    const length = bytes.readUInt32BE(at)
    if (at + 5 + length > bytes.length) break
    if (bytes[at + 4] === 0) out.push(unpackr.unpack(bytes.subarray(at + 5, at + 5 + length)))
    at += 5 + length
  }
  return out
}

/** A libp2p peer with `node`'s cluster cookie (not a member until it says hello). */
export async function cookiePeer (node: TestNode): Promise<Awaited<ReturnType<typeof createLibp2p>>> {
  return await createLibp2p({
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionProtector: preSharedKey({ psk: pskFromCookie(node.config['node.cookie']) })
  })
}
