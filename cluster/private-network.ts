/**
 * The cluster's private network: the connection protector under noise on the cluster port,
 * keyed by `node.cookie` (cluster/mesh.ts `pskFromCookie`). On the wire it is libp2p's
 * private network (`@libp2p/pnet`, the swarm key format `/key/swarm/psk/1.0.0/`): each side
 * writes a random 24-byte nonce, then every byte it sends is XORed with the XSalsa20
 * keystream of (swarm key, its own nonce) from block 0 on, and every byte it receives with
 * that of (swarm key, the peer's nonce). Members running `@libp2p/pnet` and members running
 * this file speak to each other unchanged.
 *
 * Why our own: `@libp2p/pnet` 3.0.27 ciphers with the `xsalsa20` package 1.2.0, whose
 * WebAssembly path keeps every cipher's state in one module-wide memory (64 MiB at most).
 * pnet never calls `finalize()`, so each connection that got as far as the nonces (no cookie
 * needed) leaked 128 bytes of it for good; once the leak passed the memory's first 640 KiB
 * the memory grew, and every other cipher in use, whose view of the memory that growth had
 * detached (length 0), grew it again on its next read or write by the whole of its
 * working area, until `WebAssembly.Memory.grow(): Maximum memory size exceeded` was thrown
 * in a socket's data handler and ended the node (found by bench/fuzz/cluster-door.ts after
 * 5 000-15 000 inputs; test/cluster/private-network.test.ts). Here the keystream comes from
 * `@noble/ciphers` (audited, pure JavaScript): a cipher is its key, nonce and 4 KiB of
 * keystream made ahead, garbage once its connection is, and a read of n bytes allocates n
 * bytes of output.
 *
 * Invariants:
 * - a connection's two keystreams advance by exactly the bytes that crossed it, in order
 *   (both directions are byte streams, so chunking never matters);
 * - nothing a peer sends throws out of a socket's handler: what cannot be deciphered (a
 *   keystream used up) aborts that connection alone.
 */
import { xsalsa20 } from '@noble/ciphers/salsa.js'
import { AbstractMultiaddrConnection, byteStream, type AbstractMultiaddrConnectionInit, type SendResult } from '@libp2p/utils'
import type { AbortOptions, ConnectionProtector, MessageStream, MultiaddrConnection } from '@libp2p/interface'

/** Bytes of a private-network nonce (XSalsa20's). */
export const NONCE_BYTES = 24
/** Bytes of the key in a swarm key file. */
const KEY_BYTES = 32
/** Bytes per XSalsa20 block: the keystream is made a block at a time. */
const BLOCK = 64
/**
 * The last block a keystream may use: `@noble/ciphers` counts blocks in 32 bits and refuses
 * block 2^32 - 1, so one direction of one connection carries at most (2^32 - 1) x 64 bytes
 * (256 GiB). pnet counts in 64 bits; past this a connection is closed and dialled again (new
 * nonces), which members do on their own.
 */
export const LAST_BLOCK = 2 ** 32 - 2
/** Largest piece handed to the socket per write (the stream's `maxMessageSize`). */
const DEFAULT_MAX_MESSAGE = 64 * 1024
/** How long the nonces may take (pnet's default when libp2p gives no signal). */
const DEFAULT_TIMEOUT_MS = 1000
/** Keystream blocks made ahead per call into the cipher (4 KiB). */
const KEYSTREAM_BLOCKS = 64
const ZEROS = new Uint8Array(KEYSTREAM_BLOCKS * BLOCK)

/** The keystream ran out on a connection (see {@link LAST_BLOCK}). */
export class KeystreamExhaustedError extends Error {
  override name = 'KeystreamExhaustedError'
  constructor () {
    super('the private network\'s keystream of this connection is used up (256 GiB one way): the connection is closed, and a member dials it again')
  }
}

/**
 * One direction of a private-network connection: XSalsa20 as a stream cipher, bytes in,
 * the same number of bytes out, however the stream is cut into pieces. The keystream is made
 * {@link KEYSTREAM_BLOCKS} blocks ahead (a call into the cipher costs about as much as a few
 * blocks, and most pieces on a link are small); pieces larger than that are enciphered in
 * place of the buffer, whole blocks in one call.
 */
export class XSalsa20Stream {
  private readonly key: Uint8Array
  private readonly nonce: Uint8Array
  /** Index of the next block of keystream not yet made. */
  private nextBlock = 0
  /** Keystream made ahead (a view of `space`): `ahead[used..length]` is not used yet. */
  private readonly space = new Uint8Array(KEYSTREAM_BLOCKS * BLOCK)
  private ahead = this.space.subarray(0, 0)
  private used = 0

  /**
   * `key`: 32 bytes; `nonce`: 24 bytes (both copied). `firstBlock`: where the keystream
   * starts, 0 on the wire (a test of the keystream's end starts near it).
   */
  constructor (key: Uint8Array, nonce: Uint8Array, firstBlock = 0) {
    if (key.length !== KEY_BYTES) throw new RangeError(`a private-network key has ${KEY_BYTES} bytes, not ${key.length}`)
    if (nonce.length !== NONCE_BYTES) throw new RangeError(`a private-network nonce has ${NONCE_BYTES} bytes, not ${nonce.length}`)
    this.key = Uint8Array.from(key)
    this.nonce = Uint8Array.from(nonce)
    this.nextBlock = firstBlock
  }

  /**
   * `input` XORed with the next `input.length` bytes of keystream, in a new array.
   * @throws KeystreamExhaustedError past {@link LAST_BLOCK} (the stream is then unusable).
   */
  update (input: Uint8Array): Uint8Array {
    const out = new Uint8Array(input.length)
    let at = 0
    while (at < input.length) {
      if (this.used === this.ahead.length) {
        const whole = Math.floor((input.length - at) / BLOCK)
        if (whole >= KEYSTREAM_BLOCKS) {
          // a large piece: its whole blocks in one call, without the buffer
          const blocks = this.take(whole)
          const end = at + blocks * BLOCK
          xsalsa20(this.key, this.nonce, input.subarray(at, end), out.subarray(at, end), this.nextBlock - blocks)
          at = end
          continue
        }
        const blocks = this.take(KEYSTREAM_BLOCKS)
        this.ahead = xsalsa20(this.key, this.nonce, ZEROS.subarray(0, blocks * BLOCK), this.space.subarray(0, blocks * BLOCK), this.nextBlock - blocks)
        this.used = 0
      }
      const ahead = this.ahead
      const from = this.used
      const n = Math.min(input.length - at, ahead.length - from)
      for (let i = 0; i < n; i++) out[at + i] = input[at + i] ^ ahead[from + i]
      at += n
      this.used = from + n
    }
    return out
  }

  /** Reserves up to `wanted` blocks of keystream (at least one); how many it got. */
  private take (wanted: number): number {
    const blocks = Math.min(wanted, LAST_BLOCK + 1 - this.nextBlock)
    if (blocks <= 0) throw new KeystreamExhaustedError()
    this.nextBlock += blocks
    return blocks
  }
}

/** The 32-byte key of a swarm key file (`/key/swarm/psk/1.0.0/`, `/base16/`, 64 hex digits). */
export function decodeSwarmKey (swarmKey: Uint8Array): Uint8Array {
  const [tag, codec, hex] = new TextDecoder().decode(swarmKey).split(/\r\n|\r|\n/)
  if (tag !== '/key/swarm/psk/1.0.0/' || codec !== '/base16/' || !/^[0-9a-fA-F]{64}$/.test(hex ?? '')) {
    throw new Error('the private network\'s key is not a swarm key (/key/swarm/psk/1.0.0/, /base16/, 64 hex digits)')
  }
  return Uint8Array.from(Buffer.from(hex, 'hex'))
}

/** Options of {@link privateNetwork}. */
export interface PrivateNetworkInit {
  /** The swarm key file's bytes (cluster/mesh.ts `pskFromCookie`). */
  psk: Uint8Array
  /**
   * Milliseconds the nonces may take on an inbound connection (default 1000), whatever
   * libp2p's own upgrade timeout: a peer that sends no nonce is dropped then, so silent
   * connections cannot hold the node's inbound handshake slots (libp2p refuses every new
   * connection while they are full). An outbound one waits as long as its dial's signal.
   */
  timeout?: number
  /** Largest piece encrypted and written at once (default 64 KiB). */
  maxMessageSize?: number
}

/**
 * The private network as libp2p's `connectionProtector`: `privateNetwork({ psk })`, in place
 * of `@libp2p/pnet`'s `preSharedKey({ psk })`, which it is compatible with on the wire.
 */
export function privateNetwork (init: PrivateNetworkInit): (components?: unknown) => ConnectionProtector {
  const key = decodeSwarmKey(init.psk)
  return () => ({
    async protect (connection: MessageStream, options?: AbortOptions): Promise<MessageStream> {
      const maConn = connection as MultiaddrConnection
      const log = maConn.log.newScope('private-network')
      const localNonce = crypto.getRandomValues(new Uint8Array(NONCE_BYTES))
      // the deadline guards the listener's handshake slots; a dialler waits as long as its dial
      // may take (a node that starts libp2p at this connection answers once it runs, cluster/mesh-door.ts)
      const own = options?.signal
      const deadline = AbortSignal.timeout(init.timeout ?? DEFAULT_TIMEOUT_MS)
      const signal = own === undefined ? deadline : maConn.direction === 'outbound' ? own : AbortSignal.any([own, deadline])
      const signalled = { ...options, signal }
      const bytes = byteStream(maConn)
      const [remote] = await Promise.all([bytes.read({ bytes: NONCE_BYTES, ...signalled }), bytes.write(localNonce, signalled)])
      log('exchanged nonces')
      return new EncryptedConnection({
        maConn: bytes.unwrap(),
        inbound: new XSalsa20Stream(key, remote.subarray()),
        outbound: new XSalsa20Stream(key, localNonce),
        log,
        maxMessageSize: init.maxMessageSize ?? DEFAULT_MAX_MESSAGE
      })
    }
  })
}

/** What `sendData` is given (`@libp2p/utils`' own `Uint8ArrayList`). */
type Outgoing = Parameters<AbstractMultiaddrConnection['sendData']>[0]

interface EncryptedConnectionInit extends Pick<AbstractMultiaddrConnectionInit, 'log' | 'maxMessageSize'> {
  maConn: MultiaddrConnection
  inbound: XSalsa20Stream
  outbound: XSalsa20Stream
}

/**
 * A connection after the nonces: deciphers what arrives, enciphers what leaves, and passes
 * closes, resets and back-pressure through (the shape of `@libp2p/pnet`'s `BoxMessageStream`).
 */
class EncryptedConnection extends AbstractMultiaddrConnection {
  private readonly maConn: MultiaddrConnection
  private readonly outbound: XSalsa20Stream

  constructor (init: EncryptedConnectionInit) {
    super({ log: init.log, maxMessageSize: init.maxMessageSize, remoteAddr: init.maConn.remoteAddr, direction: init.maConn.direction })
    this.maConn = init.maConn
    this.outbound = init.outbound
    const inbound = init.inbound
    this.maConn.addEventListener('message', (event) => {
      try {
        const data = event.data
        if (data instanceof Uint8Array) this.onData(inbound.update(data))
        else for (const piece of data) this.onData(inbound.update(piece))
      } catch (err) {
        // never out of the socket's handler: this connection alone ends
        this.abort(err instanceof Error ? err : new Error(String(err)))
      }
    })
    this.maConn.addEventListener('drain', () => { this.onMuxerDrain() })
    this.maConn.addEventListener('close', (event) => {
      if (event.error == null) this.onTransportClosed()
      else if (event.local) this.abort(event.error)
      else this.onRemoteReset()
    })
  }

  async sendClose (options?: AbortOptions): Promise<void> {
    await this.maConn.close(options)
  }

  sendData (data: Outgoing): SendResult {
    let sealed: Uint8Array
    try {
      sealed = this.outbound.update(data.subarray())
    } catch (err) {
      // the keystream used up: not the sender's fault, and not to be thrown at it
      this.abort(err instanceof Error ? err : new Error(String(err)))
      return { sentBytes: data.byteLength, canSendMore: false }
    }
    return { sentBytes: data.byteLength, canSendMore: this.maConn.send(sealed) }
  }

  sendReset (err: Error): void {
    this.maConn.abort(err)
  }

  sendPause (): void {
    this.maConn.pause()
  }

  sendResume (): void {
    this.maConn.resume()
  }
}
