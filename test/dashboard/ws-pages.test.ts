/**
 * The dashboard's Tools pages in a real browser (headless Chromium) against a node with
 * `allow_anonymous = false`: the WebSocket client connects with the dashboard user's one-time
 * token (and with a username and password of svc_auth_username), subscribes, publishes and
 * sees its own message; the topic explorer shows the retained value and the rate of topics an
 * mqtt.js client publishes over TCP, and closing a branch takes its subscription away (the
 * subscriptions API says so). No console error, CSP violation or failed request on either.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core'
import mqtt, { type MqttClient } from 'mqtt'
import { describeWithBrowser, launchBrowser, openPage, screenshot, type PageProblems } from '../helpers/browser.js'
import { DASH_PASSWORD, signInAsAdmin, startDashNode, type DashNode } from '../helpers/dashboard.js'

const ADMIN_BASIC = 'Basic ' + Buffer.from(`admin:${DASH_PASSWORD}`).toString('base64')
const SENSOR = { username: 'sensor', password: 'sensor-pass-1' }

describeWithBrowser('the dashboard in a browser: WebSocket client and topic explorer', () => {
  let dash: DashNode
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let watch: PageProblems
  const clients: MqttClient[] = []

  /** Calls the dashboard's /api/v3 as admin (HTTP Basic). */
  async function api (path: string, method = 'GET', body?: unknown): Promise<any> {
    const res = await fetch(`${dash.url}/api/v3${path}`, {
      method, headers: { authorization: ADMIN_BASIC, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body)
    })
    const envelope = await res.json() as { code: number, data: any, message?: string }
    if (envelope.code !== 0) throw new Error(`${method} ${path}: ${envelope.message ?? envelope.code}`)
    return envelope.data
  }

  /** An mqtt.js client over TCP as the sensor user. */
  async function sensor (): Promise<MqttClient> {
    const client = await mqtt.connectAsync({ host: '127.0.0.1', port: dash.node.port('mqtt:tcp'), reconnectPeriod: 0, ...SENSOR })
    clients.push(client)
    return client
  }

  beforeAll(async () => {
    dash = await startDashNode({ allow_anonymous: 'false' })
    // the publisher's user: svc_auth_username loaded, its user added through the API
    await dash.node.services.plugins.load('svc_auth_username')
    await api('/auth_username', 'POST', SENSOR)
    browser = await launchBrowser();
    ({ context, page, watch } = await openPage(browser, dash.url))
    await signInAsAdmin(page)
  }, 60_000)
  afterAll(async () => {
    for (const c of clients) await c.endAsync(true)
    await context?.close()
    await browser?.close()
    await dash?.destroy()
  })

  it('WebSocket client: connects with the dashboard token, subscribes, publishes and receives its own message', async () => {
    await page.goto('/#/websocket')
    // the port and path come from POST /api/v3/mqtt_token
    await expectValue(page, 'Port', String(dash.node.port('mqtt:ws')))
    expect(await page.getByLabel('Path').inputValue()).toBe('/mqtt')
    expect(await page.getByLabel('Host').inputValue()).toBe('127.0.0.1')

    await page.getByRole('button', { name: 'Connect', exact: true }).click()
    await page.getByRole('status').filter({ hasText: 'connected as dashboard:admin' }).waitFor()
    await page.getByLabel('Topic filter').fill('ws/test/#')
    await page.getByLabel('Subscription QoS').selectOption('1')
    await page.getByRole('button', { name: 'Subscribe', exact: true }).click()
    await page.getByRole('table', { name: 'Subscriptions' }).getByRole('button', { name: 'Unsubscribe from ws/test/#' }).waitFor()

    await page.getByLabel('Topic name').fill('ws/test/hello')
    await page.getByLabel('Payload').fill('hello from the page')
    await page.getByLabel('Publish QoS').selectOption('1')
    await page.getByRole('button', { name: 'Publish', exact: true }).click()
    await page.getByRole('table', { name: 'Messages received' }).getByText('hello from the page').waitFor()
    await page.getByRole('table', { name: 'Messages published' }).getByText('hello from the page').waitFor()
    // a message from elsewhere arrives too
    const s = await sensor()
    await s.publishAsync('ws/test/other', 'from mqtt.js over TCP', { qos: 1 })
    await page.getByRole('table', { name: 'Messages received' }).getByText('from mqtt.js over TCP').waitFor()
    await screenshot(page, 'websocket')

    await page.getByRole('button', { name: 'Unsubscribe from ws/test/#' }).click()
    await page.getByRole('table', { name: 'Subscriptions' }).getByText('No subscription').waitFor()
    await page.getByRole('button', { name: 'Disconnect' }).click()
    await page.getByRole('status').filter({ hasText: 'disconnected' }).waitFor()

    // a username and password instead of the token: a wrong one is refused, the right one connects
    await page.getByLabel('Sign in with my dashboard user').uncheck()
    await page.getByLabel('Username').fill(SENSOR.username)
    await page.getByLabel('Password', { exact: true }).fill('wrong')
    await page.getByLabel('Protocol version').selectOption('5')
    await page.getByRole('button', { name: 'Connect', exact: true }).click()
    await page.getByRole('status').filter({ hasText: /disconnected.*(Bad User Name or Password|refused)/i }).waitFor()
    await page.getByLabel('Password', { exact: true }).fill(SENSOR.password)
    await page.getByRole('button', { name: 'Connect', exact: true }).click()
    await page.getByRole('status').filter({ hasText: 'connected as sensor' }).waitFor()
    await page.getByRole('button', { name: 'Disconnect' }).click()
    await page.getByRole('status').filter({ hasText: 'disconnected' }).waitFor()
    expect(watch.problems).toEqual([])
  }, 60_000)

  it('topic explorer: the retained value and the rate of a branch, and closing it unsubscribes', async () => {
    const s = await sensor()
    await s.publishAsync('explorer/room1/temp', '{"celsius":21.5,"unit":"C"}', { qos: 1, retain: true })
    // a subscription elsewhere puts its first level at the top of the tree (from the routes)
    await s.subscribeAsync('commands/room1', { qos: 0 })
    const ticker = setInterval(() => { s.publish('explorer/room1/humidity', String(40 + Math.random()), { qos: 0 }) }, 100)
    try {
      await page.goto('/#/explorer')
      const status = page.getByRole('status').filter({ hasText: 'connected as dashboard:admin' })
      await status.waitFor()
      const clientId = await status.locator('code').innerText()
      await page.getByRole('button', { name: 'Select commands', exact: true }).waitFor()

      await page.getByLabel('Branch').fill('explorer')
      await page.getByRole('button', { name: 'Open branch' }).click()
      await page.getByRole('button', { name: 'Close explorer', exact: true }).waitFor()
      await waitForSubscription(clientId, 'explorer/#', true)
      await page.getByRole('button', { name: 'Open explorer/room1', exact: true }).click()
      await page.getByRole('button', { name: 'Select explorer/room1/temp', exact: true }).click()
      await page.getByLabel('Retained value of explorer/room1/temp').getByText('"celsius": 21.5').waitFor()

      // the rate of the branch: messages per second over the window, above 0 while mqtt.js publishes
      const explorerRow = page.getByRole('table', { name: 'Topic tree' }).getByRole('row')
        .filter({ has: page.getByRole('button', { name: 'Select explorer', exact: true }) })
      await waitForAsync(async () => parseFloat(await explorerRow.getByRole('cell').nth(1).innerText()) > 0, 'a rate above 0 on explorer')
      const humidityRow = page.getByRole('table', { name: 'Topic tree' }).getByRole('row')
        .filter({ has: page.getByRole('button', { name: 'Select explorer/room1/humidity', exact: true }) })
      await waitForAsync(async () => parseFloat(await humidityRow.getByRole('cell').nth(1).innerText()) > 0, 'a rate above 0 on explorer/room1/humidity')
      await screenshot(page, 'explorer')

      await page.getByRole('button', { name: 'Close explorer', exact: true }).click()
      await page.getByRole('button', { name: 'Open explorer', exact: true }).waitFor()
      await waitForSubscription(clientId, 'explorer/#', false)
      expect(await page.getByRole('button', { name: 'Select explorer/room1', exact: true }).count()).toBe(0)
      expect(watch.problems).toEqual([])
    } finally {
      clearInterval(ticker)
    }
  }, 60_000)

  /** Waits until the subscriptions API does (or does not) list `topic` for `clientId`. */
  async function waitForSubscription (clientId: string, topic: string, present: boolean): Promise<void> {
    await waitForAsync(async () => {
      const subs = await api(`/subscriptions/${encodeURIComponent(clientId)}`) as Array<{ topic: string }>
      return subs.some(s => s.topic === topic) === present
    }, `${topic} ${present ? 'subscribed' : 'unsubscribed'} by ${clientId}`)
  }
})

/** Resolves once the input labelled `label` holds `value`. */
async function expectValue (page: Page, label: string, value: string): Promise<void> {
  await waitForAsync(async () => await page.getByLabel(label).inputValue() === value, `${label} = ${value}`)
}

/** Resolves once `check` resolves true (checked every 100 ms); fails after 15 s. */
async function waitForAsync (check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 15_000
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}
