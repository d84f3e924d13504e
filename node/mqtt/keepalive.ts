/**
 * The keep alive a connection is held to, from what its CONNECT asked and two keys
 * (docs/mqtt.md, Server Keep Alive):
 *
 * - `mqtt.server_keepalive` (EMQ X 4): every v5 client is told to use it, whatever it asked
 *   (CONNACK Server Keep Alive [MQTT-3.2.2-21]).
 * - `mqtt.max_keepalive` (Mosquitto 2's `max_keepalive`): a cap. A v5 client asking for more,
 *   or for 0 (no keep alive at all, which no cap allows), is told to use the cap; one within
 *   it keeps its own (no Server Keep Alive: the server then uses the client's [MQTT-3.2.2-22]).
 *   Applied after `mqtt.server_keepalive`, so it lowers that too. MQTT 3.1 and 3.1.1 have no
 *   way to tell a client which keep alive to use, so a v3 client asking for more than the cap,
 *   or for 0, is refused with CONNACK 0x02 (identifier rejected), as Mosquitto 2.0.12 and later
 *   refuse it: accepted, it would either escape the cap or be dropped at a time it does not
 *   expect, again at every reconnect.
 *
 * Either way the broker then closes a connection silent for keep alive x
 * `mqtt.keepalive_backoff` x 2 (1.5 x at the default) [MQTT-3.1.2-22] (3.1.1: [MQTT-3.1.2-24]).
 * 0 for either key is off.
 */
import type { BrokerSettings } from './settings.js'

/** What a CONNECT's keep alive comes to. */
export type KeepaliveDecision =
  /** Accepted: the connection is held to `keepalive` seconds (0: none); `serverKeepAlive` goes in the v5 CONNACK when set. */
  | { readonly refused?: undefined, readonly keepalive: number, readonly serverKeepAlive?: number }
  /** Refused (v3 only): CONNACK return code 0x02, and why, for the log. */
  | { readonly refused: string }

/** Decides the keep alive of a CONNECT of `protocolVersion` (3, 4 or 5) that asked for `requested` seconds. */
export function negotiateKeepalive (
  protocolVersion: number, requested: number, settings: Pick<BrokerSettings, 'serverKeepalive' | 'maxKeepalive'>
): KeepaliveDecision {
  const cap = settings.maxKeepalive
  const overCap = (k: number): boolean => cap > 0 && (k === 0 || k > cap)
  if (protocolVersion < 5) {
    if (!overCap(requested)) return { keepalive: requested }
    return { refused: `keep alive ${requested === 0 ? '0 (none)' : `${requested} s`} is above mqtt.max_keepalive (${cap} s), and an MQTT ${protocolVersion === 3 ? '3.1' : '3.1.1'} client cannot be told to use less` }
  }
  let keepalive = settings.serverKeepalive > 0 ? settings.serverKeepalive : requested
  let told = settings.serverKeepalive > 0
  if (overCap(keepalive)) {
    keepalive = cap
    told = true
  }
  return told ? { keepalive, serverKeepAlive: keepalive } : { keepalive }
}
