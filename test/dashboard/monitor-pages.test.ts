/**
 * The dashboard's monitoring pages in a real browser (headless Chromium) against a real node:
 * an mqtt.js client appears on Clients, is found by the search, shows its session and
 * subscription on its detail page, is subscribed on its behalf, shows on Subscriptions and
 * Topics, and is kicked from the page (mqtt.js sees its connection closed); a real alarm
 * (the process memory watermark, lowered and raised again through the configs API) is shown
 * raised, then cleared in the history; Listeners shows the MQTT TCP listener. Every page with
 * no console error and no failed request, reached with labels and roles, and a screenshot.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core'
import mqtt, { type MqttClient } from 'mqtt'
import { describeWithBrowser, launchBrowser, openPage, screenshot, type PageProblems } from '../helpers/browser.js'
import { signInAsAdmin, startDashNode, type DashNode } from '../helpers/dashboard.js'
import { apiRequest } from '../helpers/node.js'

describeWithBrowser('the dashboard in a browser: monitoring pages', () => {
  let browser: Browser
  let n: DashNode
  let context: BrowserContext
  let page: Page
  let watch: PageProblems
  let client: MqttClient

  beforeAll(async () => {
    // memory checked every second, so the alarm test need not wait a minute
    n = await startDashNode({ 'os_mon.mem_check_interval': '1s', 'broker.sys_interval': '0' })
    browser = await launchBrowser()
    ;({ context, page, watch } = await openPage(browser, n.url))
    await signInAsAdmin(page)
    client = mqtt.connect({ host: '127.0.0.1', port: n.node.port('mqtt:tcp'), clientId: 'dash-client-1', username: 'dash-user', protocolVersion: 5, reconnectPeriod: 0 })
    await new Promise<void>((resolve, reject) => { client.once('connect', () => resolve()); client.once('error', reject) })
    await client.subscribeAsync('dash/topic/+', { qos: 1 })
  }, 60_000)

  afterAll(async () => {
    client?.end(true)
    await context?.close()
    await browser?.close()
    await n?.destroy()
  })

  afterEach(() => {
    expect(watch.problems).toEqual([])
  })

  const row = (table: string, text: string) => page.getByRole('table', { name: table, exact: true }).getByRole('row').filter({ hasText: text })

  it('lists the connected client on Clients and finds it by the search', async () => {
    await page.goto('/#/clients')
    await row('Connections', 'dash-client-1').waitFor()
    await expectText(row('Connections', 'dash-client-1'), ['dash-user', '127.0.0.1:', n.node.name, 'MQTT 5.0'])
    await page.getByLabel('Client ID').fill('no-such-client')
    await page.getByLabel('Client ID').press('Enter')
    await page.getByText('No client is connected that matches the search.').waitFor()
    await page.getByLabel('Client ID').fill('client-1')
    await page.getByLabel('Username').fill('dash')
    await page.getByLabel('Protocol').selectOption({ label: 'MQTT 5.0' })
    await page.getByLabel('Node').selectOption(n.node.name)
    await page.getByRole('button', { name: 'Search' }).click()
    await row('Connections', 'dash-client-1').waitFor()
    await page.getByLabel('Protocol').selectOption({ label: 'MQTT 3.1.1' })
    await page.getByRole('button', { name: 'Search' }).click()
    await page.getByText('No client is connected that matches the search.').waitFor()
    await page.getByRole('button', { name: 'Reset' }).click()
    await row('Connections', 'dash-client-1').waitFor()
    await screenshot(page, 'clients')
  }, 60_000)

  it('opens the client\'s detail: connection, session, subscription; subscribes and unsubscribes on its behalf', async () => {
    await page.getByRole('link', { name: 'dash-client-1' }).click()
    await page.waitForURL(url => url.hash === '#/clients/dash-client-1')
    await page.getByText('Connected', { exact: true }).waitFor()
    await page.getByLabel('Session fields').locator('[data-field="client_id"]').filter({ hasText: 'dash-client-1' }).waitFor()
    await page.getByLabel('Connection fields').locator('[data-field="username"]').filter({ hasText: 'dash-user' }).waitFor()
    await row('Subscriptions of the client', 'dash/topic/+').waitFor()
    await page.getByLabel('Topic filter').fill('dash/extra/#')
    await page.getByLabel('QoS').selectOption('2')
    await page.getByRole('button', { name: 'Subscribe', exact: true }).click()
    await expectText(row('Subscriptions of the client', 'dash/extra/#'), ['2'])
    // the subscription is the client's: a message on it reaches mqtt.js
    const got = new Promise<string>(resolve => client.once('message', (topic) => resolve(topic)))
    await apiRequest(n.node, '/mqtt/publish', 'POST', { topic: 'dash/extra/1', payload: 'x', qos: 0, client_id: 'api' })
    expect(await got).toBe('dash/extra/1')
    await screenshot(page, 'client-detail')
    await page.getByRole('button', { name: 'Unsubscribe from dash/extra/#' }).click()
    await expectGone(row('Subscriptions of the client', 'dash/extra/#'))
  }, 60_000)

  it('shows the subscription on Subscriptions, filtered by a matching topic, and its route on Topics', async () => {
    await page.getByRole('link', { name: 'Subscriptions', exact: true }).click()
    await expectText(row('Subscriptions', 'dash/topic/+'), ['dash-client-1', '1', n.node.name])
    await page.getByLabel('Matching topic').fill('dash/topic/kitchen')
    await page.getByRole('button', { name: 'Search' }).click()
    await row('Subscriptions', 'dash/topic/+').waitFor()
    await page.getByLabel('Matching topic').fill('other/topic')
    await page.getByRole('button', { name: 'Search' }).click()
    await page.getByText('No subscription matches the search.').waitFor()
    await page.getByRole('button', { name: 'Reset' }).click()
    await row('Subscriptions', 'dash/topic/+').waitFor()
    await screenshot(page, 'subscriptions')

    await page.getByRole('link', { name: 'Topics', exact: true }).click()
    await expectText(row('Routes', 'dash/topic/+'), [n.node.name])
    await page.getByLabel('Topic filter').fill('dash/topic/+')
    await page.getByRole('button', { name: 'Look up' }).click()
    await row('Routes', 'dash/topic/+').waitFor()
    await page.getByLabel('Topic filter').fill('no/route')
    await page.getByRole('button', { name: 'Look up' }).click()
    await page.getByText('No route for no/route.').waitFor()
    await page.getByRole('button', { name: 'Show all' }).click()
    await row('Routes', 'dash/topic/+').waitFor()
    await screenshot(page, 'topics')
  }, 60_000)

  it('shows the MQTT TCP listener on Listeners', async () => {
    await page.getByRole('link', { name: 'Listeners', exact: true }).click()
    const tcp = page.getByRole('table', { name: `Listeners of ${n.node.name}` }).locator('tr[data-protocol="mqtt:tcp"]')
    await expectText(tcp, [String(n.node.port('mqtt:tcp'))])
    await page.getByRole('table', { name: `Listeners of ${n.node.name}` }).locator('tr[data-protocol="http:dashboard"]').waitFor()
    await screenshot(page, 'listeners')
  }, 60_000)

  it('shows an alarm raised, then cleared in the history', async () => {
    const alarm = 'process_memory_high_watermark'
    await page.getByRole('link', { name: 'Alarms', exact: true }).click()
    await page.getByRole('heading', { name: /Present alarms/ }).waitFor()
    expect((await apiRequest(n.node, '/configs/starling', 'PUT', { 'os_mon.procmem_high_watermark': '0%' })).code).toBe(0)
    const present = page.getByRole('table', { name: 'Present alarms' }).locator(`tr[data-alarm="${alarm}"]`)
    await expectText(present, [n.node.name, 'above os_mon.procmem_high_watermark'])
    await screenshot(page, 'alarms')
    expect((await apiRequest(n.node, '/configs/starling', 'PUT', { 'os_mon.procmem_high_watermark': '100%' })).code).toBe(0)
    await expectGone(present)
    await page.getByRole('table', { name: 'Alarm history' }).locator(`tr[data-alarm="${alarm}"]`).first().waitFor()
    // one node's view
    await page.getByLabel('Node').selectOption(n.node.name)
    await page.getByRole('table', { name: 'Alarm history' }).locator(`tr[data-alarm="${alarm}"]`).first().waitFor()
  }, 60_000)

  it('kicks the client from Clients after a confirmation: mqtt.js is disconnected', async () => {
    await page.getByRole('link', { name: 'Clients', exact: true }).click()
    await page.getByRole('button', { name: 'Kick dash-client-1' }).click()
    const dialog = page.getByRole('dialog', { name: 'Kick the client' })
    // Cancel leaves it connected
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await expectGone(dialog)
    expect(client.connected).toBe(true)
    await page.getByRole('button', { name: 'Kick dash-client-1' }).click()
    await screenshot(page, 'clients-kick')
    const closed = new Promise<void>(resolve => client.once('close', () => resolve()))
    await dialog.getByRole('button', { name: 'Kick', exact: true }).click()
    await closed
    await page.getByText('Client dash-client-1 kicked out').waitFor()
    await expectGone(row('Connections', 'dash-client-1'))
    // its detail says it is gone, and offers no kick
    await page.goto('/#/clients/dash-client-1')
    await page.getByText('Not connected', { exact: true }).waitFor()
    expect(await page.getByRole('button', { name: 'Kick' }).count()).toBe(0)
  }, 60_000)
})

/** Waits until `locator` is visible and holds each of `texts`. */
async function expectText (locator: ReturnType<Page['locator']>, texts: string[]): Promise<void> {
  await locator.first().waitFor()
  const text = await locator.first().innerText()
  for (const t of texts) expect(text).toContain(t)
}

/** Waits until nothing matches `locator`. */
async function expectGone (locator: ReturnType<Page['locator']>): Promise<void> {
  await locator.first().waitFor({ state: 'detached' })
}
