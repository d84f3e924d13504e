/**
 * The banned list over the wire: real mqtt.js clients against a node and its own banned
 * service (`node.services.banned`), entries added through the service and through starling-ctl.
 */
import type { IClientOptions } from 'mqtt'
import { startTestNode, closeClients, connect, waitFor, type TestNode } from '../helpers/node.js'
import { closeOpened, refusedConnack } from '../helpers/mqtt.js'
import { PROJECT_ROOT } from '../helpers/process.js'
import { BANNED_CTL_COMMANDS, type BannedService } from '../../node/banned/index.js'
import { runCtlOn } from '../helpers/ctl.js'

/** Expects `opts` to be refused as banned: CONNACK 0x8A for MQTT 5, 5 for MQTT 3.1.1. */
async function expectBanned (node: TestNode, opts: IClientOptions): Promise<void> {
  expect((await refusedConnack(node, { ...opts, protocolVersion: 5 }))?.reasonCode).toBe(0x8a)
  expect((await refusedConnack(node, { ...opts, protocolVersion: 4 }))?.returnCode).toBe(5)
}

const nowSeconds = (): number => Math.floor(Date.now() / 1000)

let node: TestNode
let banned: BannedService

beforeAll(async () => {
  node = await startTestNode()
  banned = node.services.banned
})
afterEach(async () => {
  await closeClients()
  await closeOpened()
  for (const entry of banned.list()) await banned.delete(entry.who, entry.as)
})
afterAll(async () => {
  await node.destroy()
})

describe('banned list at CONNECT', () => {
  it('refuses a banned client id with 0x8A (MQTT 5) and 5 (MQTT 3.1.1), others still connect', async () => {
    await banned.add({ who: 'evil-client', as: 'client_id', reason: 'abuse' })
    await expectBanned(node, { clientId: 'evil-client' })
    await connect(node, { clientId: 'good-client', protocolVersion: 5 })
  })

  it('refuses a banned username', async () => {
    await banned.add({ who: 'evil-user', as: 'username' })
    await expectBanned(node, { clientId: 'c-user', username: 'evil-user', password: 'x' })
    await connect(node, { clientId: 'c-user', username: 'nice-user', password: 'x', protocolVersion: 4 })
  })

  it('refuses a banned IP address', async () => {
    await banned.add({ who: '127.0.0.1', as: 'ip_address' })
    await expectBanned(node, { clientId: 'from-localhost' })
    await banned.delete('127.0.0.1', 'ip_address')
    await connect(node, { clientId: 'from-localhost', protocolVersion: 5 })
  })

  it('accepts the client again once until has passed', async () => {
    const until = nowSeconds() + 2
    await banned.add({ who: 'briefly-banned', as: 'client_id', until })
    await expectBanned(node, { clientId: 'briefly-banned' })
    await waitFor(() => Date.now() >= until * 1000, 'the ban to expire', 5000)
    await connect(node, { clientId: 'briefly-banned', protocolVersion: 5 })
    await connect(node, { clientId: 'briefly-banned', protocolVersion: 4 })
  })

  it('does not kick a client that is already connected when it gets banned (as EMQ X 4)', async () => {
    const client = await connect(node, { clientId: 'connected-first', protocolVersion: 5 })
    await banned.add({ who: 'connected-first', as: 'client_id' })
    await client.publishAsync('banned/still-here', 'x', { qos: 1 })
    expect(client.connected).toBe(true)
  })
})

describe('banned entries across a restart', () => {
  it('keeps refusing after the node restarts on the same data directory', async () => {
    let other = await startTestNode()
    try {
      await other.services.banned.add({ who: 'persistent', as: 'client_id' })
      await other.stop()
      other = await startTestNode({}, other.dataDir)
      expect(other.services.banned.list()).toEqual([expect.objectContaining({ who: 'persistent', as: 'client_id' })])
      await expectBanned(other, { clientId: 'persistent' })
    } finally {
      await other.destroy()
    }
  })
})

describe('starling-ctl banned', () => {
  async function ctl (...argv: string[]): Promise<{ code: number, out: string, err: string }> {
    return await runCtlOn(node, argv, { cwd: PROJECT_ROOT, commands: BANNED_CTL_COMMANDS })
  }

  it('adds an entry that refuses the client, lists it and deletes it', async () => {
    const until = nowSeconds() + 3600
    expect(await ctl('banned', 'add', 'client_id', 'ctl-banned', '--reason', 'testing', '--desc', 'from ctl', '--until', String(until)))
      .toEqual({ code: 0, out: 'ok\n', err: '' })
    await expectBanned(node, { clientId: 'ctl-banned' })

    const list = await ctl('banned', 'list')
    expect(list.code).toBe(0)
    expect(list.out).toMatch(/ctl-banned/)
    expect(list.out).toMatch(new RegExp(`${until} \\(\\d{4}-\\d\\d-\\d\\dT`))
    const json = await ctl('--json', 'banned', 'list')
    expect(JSON.parse(json.out)).toEqual([{ who: 'ctl-banned', as: 'client_id', reason: 'testing', desc: 'from ctl', by: 'starling-ctl', until }])

    expect(await ctl('banned', 'del', 'client_id', 'ctl-banned')).toEqual({ code: 0, out: 'ok\n', err: '' })
    await connect(node, { clientId: 'ctl-banned', protocolVersion: 5 })
    expect((await ctl('banned', 'list')).out).toBe('No banned entries\n')
  })

  it('bans for 5 minutes when --until is not given', async () => {
    const before = nowSeconds()
    expect((await ctl('banned', 'add', 'username', 'five-minutes')).code).toBe(0)
    const [entry] = banned.list()
    expect(entry.until).toBeGreaterThanOrEqual(before + 300)
    expect(entry.until).toBeLessThanOrEqual(nowSeconds() + 300)
  })

  it('fails with exit code 1 and says what is wrong', async () => {
    const badAs = await ctl('banned', 'add', 'clientId', 'x')
    expect(badAs.code).toBe(1)
    expect(badAs.err).toMatch(/"as" must be one of client_id, username, ip_address/)
    const badUntil = await ctl('banned', 'add', 'client_id', 'x', '--until', String(Date.now() + 60_000))
    expect(badUntil.err).toMatch(/not milliseconds/)
    const badIp = await ctl('banned', 'add', 'ip_address', 'not-an-ip')
    expect(badIp.err).toMatch(/must be an IP address/)
    const unknown = await ctl('banned', 'del', 'client_id', 'never-banned')
    expect(unknown.code).toBe(1)
    expect(unknown.err).toMatch(/no banned entry for client_id "never-banned"/)
    expect(banned.list()).toEqual([])
  })
})
