/**
 * The keep alive a CONNECT comes to under `mqtt.server_keepalive` and `mqtt.max_keepalive`
 * (node/mqtt/keepalive.ts; the real clients are in test/e2e/mqtt-max-keepalive.test.ts).
 */
import { negotiateKeepalive } from '../../../node/mqtt/keepalive.js'

const off = { serverKeepalive: 0, maxKeepalive: 0 }

describe('negotiateKeepalive', () => {
  it.each([
    // [protocol version, asked, settings, decision]
    [5, 60, off, { keepalive: 60 }],
    [5, 0, off, { keepalive: 0 }],
    [4, 0, off, { keepalive: 0 }],
    [5, 30, { serverKeepalive: 0, maxKeepalive: 30 }, { keepalive: 30 }],
    [5, 10, { serverKeepalive: 0, maxKeepalive: 30 }, { keepalive: 10 }],
    [5, 31, { serverKeepalive: 0, maxKeepalive: 30 }, { keepalive: 30, serverKeepAlive: 30 }],
    [5, 0, { serverKeepalive: 0, maxKeepalive: 30 }, { keepalive: 30, serverKeepAlive: 30 }],
    [5, 65535, { serverKeepalive: 0, maxKeepalive: 30 }, { keepalive: 30, serverKeepAlive: 30 }],
    // server_keepalive (EMQ X) applies to every v5 client; the cap lowers it
    [5, 10, { serverKeepalive: 60, maxKeepalive: 0 }, { keepalive: 60, serverKeepAlive: 60 }],
    [5, 10, { serverKeepalive: 20, maxKeepalive: 30 }, { keepalive: 20, serverKeepAlive: 20 }],
    [5, 10, { serverKeepalive: 60, maxKeepalive: 30 }, { keepalive: 30, serverKeepAlive: 30 }],
    // v3 clients cannot be told: within the cap they keep theirs, server_keepalive does not apply
    [4, 30, { serverKeepalive: 60, maxKeepalive: 30 }, { keepalive: 30 }],
    [3, 5, { serverKeepalive: 0, maxKeepalive: 30 }, { keepalive: 5 }]
  ])('v%i asking for %i s with %j: %j', (version, asked, settings, decision) => {
    expect(negotiateKeepalive(version, asked, settings)).toEqual(decision)
  })

  it('refuses an MQTT 3.1.1 or 3.1 client asking for more than the cap, or for none', () => {
    const capped = { serverKeepalive: 0, maxKeepalive: 30 }
    expect(negotiateKeepalive(4, 31, capped).refused).toMatch(/keep alive 31 s is above mqtt.max_keepalive \(30 s\).*MQTT 3\.1\.1/)
    expect(negotiateKeepalive(4, 0, capped).refused).toMatch(/keep alive 0 \(none\) is above mqtt.max_keepalive/)
    expect(negotiateKeepalive(3, 600, capped).refused).toMatch(/MQTT 3\.1 client/)
  })
})
