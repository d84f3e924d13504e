import { randomBytes } from 'node:crypto'

/** Length of an assigned client identifier: what every MQTT 3.1.1 server must accept [MQTT-3.1.3-5]. */
export const ASSIGNED_CLIENT_ID_LENGTH = 23

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/**
 * A client identifier for a client that sent a zero-length one [MQTT-3.1.3-6],
 * [MQTT-3.1.3-7]: 23 characters of [0-9A-Za-z], so it fits every `mqtt.max_clientid_len`
 * (at least 23) and is accepted by any server the client may be bridged to. Random (about
 * 136 bits): unique without coordination between the nodes of a cluster.
 */
export function assignClientId (): string {
  const bytes = randomBytes(ASSIGNED_CLIENT_ID_LENGTH)
  let id = ''
  // 256 % 62 leaves a slight bias towards the first characters: irrelevant for uniqueness
  for (let i = 0; i < bytes.length; i++) id += ALPHABET[bytes[i] % ALPHABET.length]
  return id
}
