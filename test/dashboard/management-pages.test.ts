/**
 * The dashboard's management pages in a real browser (headless Chromium) against a real node:
 * plugins loaded, unloaded and configured from the page (and checked through the API); a
 * client banned and unbanned on the page, refused and then let in over MQTT (mqtt.js); an API
 * application created on the page, its secret read from the dialog and used on the management
 * listener; dashboard users added and deleted (106 for admin shown); a live setting changed;
 * an MQTT bridge to a real Mosquitto shown connected, stopped and started. Every page with no
 * console error and no failed request; a screenshot of each.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import mqtt, { type IClientOptions } from 'mqtt'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { describeWithBrowser, launchBrowser, openPage, screenshot, type PageProblems } from '../helpers/browser.js'
import { startDashNode, signInAsAdmin, DASH_PASSWORD, type DashNode } from '../helpers/dashboard.js'
import { apiRequest } from '../helpers/node.js'
import { startMosquitto, type MosquittoServer } from '../helpers/servers/mosquitto.js'

/** What a CONNACK says to `opts`: `null` when the client connected, else the refusal's code (v3.1.1 return code). */
async function connackRefusal (port: number, opts: IClientOptions): Promise<number | null> {
  const client = mqtt.connect({ host: '127.0.0.1', port, reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 4, ...opts })
  try {
    return await new Promise<number | null>((resolve, reject) => {
      client.on('packetreceive', (p: any) => { if (p.cmd === 'connack') resolve(p.returnCode === 0 ? null : p.returnCode) })
      client.on('error', () => {})
      client.once('close', () => reject(new Error('closed without CONNACK')))
    })
  } finally {
    client.end(true)
  }
}

describeWithBrowser('the dashboard in a browser: management pages', () => {
  let browser: Browser
  let dash: DashNode
  let remote: MosquittoServer
  let etcDir: string
  let context: BrowserContext
  let page: Page
  let watch: PageProblems
  let nodeName: string

  const api = async (path: string, method = 'GET', body?: unknown): Promise<any> => await apiRequest(dash.node, path, method, body)
  const nodePath = (): string => `/nodes/${encodeURIComponent(nodeName)}`
  const dialog = (name: string | RegExp): ReturnType<Page['getByRole']> => page.getByRole('dialog', { name })
  const notice = async (text: string | RegExp): Promise<void> => { await page.getByRole('status').filter({ hasText: text }).first().waitFor() }

  beforeAll(async () => {
    remote = await startMosquitto()
    etcDir = mkdtempSync(join(tmpdir(), 'starling-dash-etc-'))
    cpSync('etc/plugins', join(etcDir, 'plugins'), { recursive: true })
    writeFileSync(join(etcDir, 'plugins', 'svc_bridge_mqtt.conf'), [
      `bridge.mqtt.aws.address = 127.0.0.1:${remote.port}`,
      'bridge.mqtt.aws.start_type = auto',
      'bridge.mqtt.aws.forwards = topic1/#',
      'bridge.mqtt.aws.subscription.1.topic = cmd/#',
      'bridge.mqtt.aws.reconnect_interval = 1s',
      ''
    ].join('\n'))
    dash = await startDashNode({}, { etcDir })
    nodeName = dash.node.name
    browser = await launchBrowser()
    ;({ context, page, watch } = await openPage(browser, dash.url))
    await signInAsAdmin(page)
  }, 60_000)

  afterAll(async () => {
    await context?.close()
    await browser?.close()
    await dash?.destroy()
    await remote?.close()
    if (etcDir !== undefined) rmSync(etcDir, { recursive: true, force: true })
  })

  afterEach(() => {
    // every page visited so far: no console error, no failed request, no unexpected error answer
    expect(watch.problems).toEqual([])
  })

  it('loads and unloads a plugin, and edits a plugin\'s settings', async () => {
    await page.goto('/#/plugins')
    const row = page.getByRole('table', { name: `Plugins of ${nodeName}` }).getByRole('row').filter({ hasText: 'svc_delayed_publish' })
    await row.getByText('Running').waitFor()
    await screenshot(page, 'plugins')

    await row.getByRole('button', { name: 'Unload svc_delayed_publish' }).click()
    await dialog('Unload svc_delayed_publish').getByRole('button', { name: 'Unload' }).click()
    await row.getByText('Stopped').waitFor()
    const active = async (): Promise<boolean> => (await api(`${nodePath()}/plugins/`)).data.find((p: any) => p.name === 'svc_delayed_publish').active
    expect(await active()).toBe(false)
    await row.getByRole('button', { name: 'Load svc_delayed_publish' }).click()
    await row.getByText('Running').waitFor()
    expect(await active()).toBe(true)

    // settings: a bad value is refused with its code in the dialog, a good one saved and the plugin reloaded
    watch.expect(400, /\/plugin_configs\/svc_retainer$/)
    await page.getByRole('button', { name: 'Configure svc_retainer' }).click()
    const form = dialog(`Configure svc_retainer on ${nodeName}`)
    const field = form.getByLabel('retainer.max_payload_size')
    await expect(field.inputValue()).resolves.toBe('1MB')
    await field.fill('lots')
    await form.getByRole('button', { name: 'Save' }).click()
    await form.getByRole('alert').filter({ hasText: '(code 108)' }).waitFor()
    await screenshot(page, 'plugin-config')
    await field.fill('2MB')
    await form.getByRole('button', { name: 'Save' }).click()
    await notice('saved and reloaded')
    await form.waitFor({ state: 'detached' })
    const settings = (await api(`${nodePath()}/plugin_configs/svc_retainer?format=object`)).data
    expect(settings['retainer.max_payload_size']).toBe('2MB')
  }, 60_000)

  it('bans a client id, which is then refused over MQTT, and lets it in again', async () => {
    const port = dash.node.port('mqtt:tcp')
    await page.goto('/#/banned')
    await page.getByText('Nobody is banned.').waitFor()
    await page.getByLabel('Who', { exact: true }).fill('bad-device')
    await page.getByLabel('As', { exact: true }).selectOption('client_id')
    await page.getByLabel('Reason').fill('flooding')
    await page.getByRole('button', { name: 'Ban', exact: true }).click()
    const row = page.getByRole('table', { name: 'Banned' }).getByRole('row').filter({ hasText: 'bad-device' })
    await row.getByText('flooding').waitFor()
    await screenshot(page, 'banned')
    expect(await connackRefusal(port, { clientId: 'bad-device' })).toBe(5)
    expect(await connackRefusal(port, { clientId: 'good-device' })).toBeNull()

    await row.getByRole('button', { name: 'Delete bad-device' }).click()
    await dialog('Delete the ban').getByRole('button', { name: 'Delete' }).click()
    await page.getByText('Nobody is banned.').waitFor()
    expect((await api('/banned/')).data).toEqual([])
    expect(await connackRefusal(port, { clientId: 'bad-device' })).toBeNull()
  }, 60_000)

  it('creates an API application whose secret, shown once, works on the management listener', async () => {
    await page.goto('/#/applications')
    await page.getByRole('table', { name: 'Applications' }).getByText('admin', { exact: true }).waitFor()
    await screenshot(page, 'applications')
    await page.getByLabel('App ID').fill('ui-script')
    await page.getByLabel('Description', { exact: true }).fill('made on the page')
    await page.getByRole('button', { name: 'Create' }).click()
    const shown = dialog('Application created')
    await shown.getByText('it will not be shown again').waitFor()
    const secret = await shown.getByLabel('Secret').inputValue()
    expect(secret.length).toBeGreaterThan(16)
    await screenshot(page, 'application-created')

    const management = `http://127.0.0.1:${dash.port('http:management')}/api/v3/brokers/`
    const basic = (s: string): string => 'Basic ' + Buffer.from(`ui-script:${s}`).toString('base64')
    // as a user would: curl with the app id and the secret copied from the dialog
    // (not execFileSync: the node runs in this process and must answer meanwhile)
    const curl = (await promisify(execFile)('curl', ['-s', '-m', '10', '-w', '\n%{http_code}', '-u', `ui-script:${secret}`, management], { encoding: 'utf8' })).stdout
    const [body, status] = [curl.slice(0, curl.lastIndexOf('\n')), curl.slice(curl.lastIndexOf('\n') + 1)]
    expect(status).toBe('200')
    expect(JSON.parse(body).code).toBe(0)

    await shown.getByRole('button', { name: 'Done' }).click()
    await shown.waitFor({ state: 'detached' })
    expect(await page.content()).not.toContain(secret)

    // disabled on the page: refused from then on
    const row = page.getByRole('table', { name: 'Applications' }).getByRole('row').filter({ hasText: 'ui-script' })
    await row.getByRole('button', { name: 'Edit ui-script' }).click()
    const edit = dialog('Edit ui-script')
    await edit.getByLabel('Enabled').uncheck()
    await edit.getByRole('button', { name: 'Save' }).click()
    await row.getByText('Disabled').waitFor()
    expect((await fetch(management, { headers: { authorization: basic(secret) } })).status).toBe(401)

    // the default application cannot be deleted: the code shows in the dialog
    watch.expect(400, /^\/api\/v3\/apps\/admin$/)
    await page.getByRole('button', { name: 'Delete admin' }).click()
    const refuse = dialog('Delete the application')
    await refuse.getByRole('button', { name: 'Delete' }).click()
    await refuse.getByRole('alert').filter({ hasText: '(code 106)' }).waitFor()
    await refuse.getByRole('button', { name: 'Cancel' }).click()

    await row.getByRole('button', { name: 'Delete ui-script' }).click()
    await dialog('Delete the application').getByRole('button', { name: 'Delete' }).click()
    await row.waitFor({ state: 'detached' })
    expect((await api('/apps/')).data.map((a: any) => a.app_id)).toEqual(['admin'])
  }, 60_000)

  it('adds and deletes a dashboard user; deleting admin shows 106', async () => {
    await page.goto('/#/users')
    const table = page.getByRole('table', { name: 'Users' })
    await table.getByRole('row').filter({ hasText: 'admin (you)' }).waitFor()
    await page.getByLabel('User name').fill('bob')
    await page.getByLabel('Password', { exact: true }).fill('bob-pass-1')
    await page.getByLabel('Tags').fill('viewer')
    await page.getByRole('button', { name: 'Add' }).click()
    const bob = table.getByRole('row').filter({ hasText: 'bob' })
    await bob.getByText('viewer').waitFor()
    // bob can sign in with it (HTTP Basic on the dashboard listener)
    const asBob = await fetch(`${dash.url}/api/v3/users`, { headers: { authorization: 'Basic ' + Buffer.from('bob:bob-pass-1').toString('base64') } })
    expect(asBob.status).toBe(200)
    await screenshot(page, 'users')

    // adding bob again: 113 on the page
    watch.expect(400, /^\/api\/v3\/users$/)
    await page.getByLabel('User name').fill('bob')
    await page.getByLabel('Password', { exact: true }).fill('other-pass-1')
    await page.getByRole('button', { name: 'Add' }).click()
    await page.getByRole('alert').filter({ hasText: '(code 113)' }).waitFor()

    watch.expect(400, /^\/api\/v3\/users\/admin$/)
    await table.getByRole('button', { name: 'Delete admin' }).click()
    const refuse = dialog('Delete the user')
    await refuse.getByRole('button', { name: 'Delete' }).click()
    await refuse.getByRole('alert').filter({ hasText: '(code 106)' }).waitFor()
    await refuse.getByRole('button', { name: 'Cancel' }).click()

    await bob.getByRole('button', { name: 'Delete bob' }).click()
    await dialog('Delete the user').getByRole('button', { name: 'Delete' }).click()
    await bob.waitFor({ state: 'detached' })
    const users = await fetch(`${dash.url}/api/v3/users`, { headers: { authorization: 'Basic ' + Buffer.from(`admin:${DASH_PASSWORD}`).toString('base64') } })
    expect(((await users.json()) as any).data.map((u: any) => u.username)).toEqual(['admin'])
  }, 60_000)

  it('changes a live setting, with a bad value refused with its code', async () => {
    watch.expect(400, /^\/api\/v3\/configs\/starling$/)
    await page.goto('/#/settings')
    const field = page.getByLabel('mqtt.max_packet_size', { exact: true })
    await expect(field.inputValue()).resolves.toBe('1MB')
    await field.fill('huge')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('alert').filter({ hasText: '(code 108)' }).waitFor()
    await field.fill('2MB')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('list', { name: 'Outcome' }).getByText('applied mqtt.max_packet_size').waitFor()
    await screenshot(page, 'settings')
    expect((await api(`${nodePath()}/configs/`)).data.configs['mqtt.max_packet_size']).toBe('2MB')
    expect(dash.node.config['mqtt.max_packet_size']).toBe(2 * 1024 * 1024)
  }, 60_000)

  it('shows the bridges once their plugin is loaded: a bridge to Mosquitto connected, stopped and started', async () => {
    await page.goto('/#/bridges')
    await page.getByRole('heading', { name: 'The bridge plugin is not loaded' }).waitFor()
    await screenshot(page, 'bridges-not-loaded')
    await page.getByRole('main').getByRole('link', { name: 'Plugins' }).click()
    await page.waitForURL(url => url.hash === '#/plugins')
    await page.getByRole('button', { name: 'Load svc_bridge_mqtt' }).click()
    await page.getByRole('button', { name: 'Unload svc_bridge_mqtt' }).waitFor()

    await page.goto('/#/bridges')
    const row = page.getByRole('table', { name: 'Bridges' }).getByRole('row').filter({ hasText: 'aws' })
    await row.getByText('connected', { exact: true }).waitFor({ timeout: 15_000 })
    await screenshot(page, 'bridges')
    const status = async (): Promise<string> => (await api(`${nodePath()}/bridges/aws`)).data.status

    await row.getByRole('button', { name: 'Stop aws' }).click()
    await dialog('Stop aws').getByRole('button', { name: 'Stop' }).click()
    await row.getByText('stopped', { exact: true }).waitFor()
    expect(await status()).toBe('stopped')
    await row.getByRole('button', { name: 'Start aws' }).click()
    await row.getByText('connected', { exact: true }).waitFor({ timeout: 15_000 })
    expect(await status()).toBe('connected')

    // its topics: a forward added and removed at run time
    await row.getByRole('button', { name: 'Topics of aws' }).click()
    const topics = page.getByRole('region', { name: 'Topics of aws' })
    await topics.getByRole('list', { name: 'Forwards' }).getByText('topic1/#').waitFor()
    await topics.getByRole('list', { name: 'Subscriptions' }).getByText('cmd/#').waitFor()
    await topics.getByLabel('Local topic filter').fill('site/+/up')
    await topics.getByRole('button', { name: 'Add forward' }).click()
    await topics.getByRole('list', { name: 'Forwards' }).getByText('site/+/up').waitFor()
    expect((await api(`${nodePath()}/bridges/aws/forwards`)).data).toEqual(['topic1/#', 'site/+/up'])
    await screenshot(page, 'bridge-topics')
    await topics.getByRole('button', { name: 'Remove forward site/+/up' }).click()
    await dialog('Remove the forward').getByRole('button', { name: 'Remove' }).click()
    await topics.getByRole('list', { name: 'Forwards' }).getByText('site/+/up').waitFor({ state: 'detached' })
    expect((await api(`${nodePath()}/bridges/aws/forwards`)).data).toEqual(['topic1/#'])
  }, 90_000)

  it('is usable with the keyboard: every input labelled, every button named, a ban added and deleted with keys only', async () => {
    for (const path of ['plugins', 'banned', 'applications', 'users', 'settings', 'bridges']) {
      await page.goto(`/#/${path}`)
      await page.locator('.content').getByRole('button').first().waitFor()
      // (no DOM types in the tests' tsconfig: the elements are `any` here)
      const unlabelled = await page.locator('.content input:not([hidden]), .content select').evaluateAll((els: any[]) =>
        els.filter(el => el.labels?.length === 0 && el.getAttribute('aria-label') === null).map(el => el.outerHTML as string))
      expect(unlabelled).toEqual([])
      const unnamed = await page.locator('.content button').evaluateAll((els: any[]) =>
        els.filter(el => String(el.textContent ?? '').trim() === '' && el.getAttribute('aria-label') === null).map(el => el.outerHTML as string))
      expect(unnamed).toEqual([])
    }

    // a ban added and deleted with the keyboard only: Enter submits, the dialog's buttons take Tab and Enter, Escape closes it
    await page.goto('/#/banned')
    await page.getByText('Nobody is banned.').waitFor()
    await page.getByLabel('Who', { exact: true }).focus()
    await page.keyboard.type('typed-device')
    await page.keyboard.press('Enter')
    const del = page.getByRole('button', { name: 'Delete typed-device' })
    await del.focus()
    await page.keyboard.press('Enter')
    await dialog('Delete the ban').waitFor()
    await page.keyboard.press('Escape')
    await dialog('Delete the ban').waitFor({ state: 'detached' })
    // reopened with the keyboard; in CI's loaded runs the first Enter after an Escape twice opened
    // nothing (never seen outside CI): a key that opened no dialog within 5 s is pressed again
    for (let tries = 1; !await dialog('Delete the ban').isVisible(); tries++) {
      if (tries > 3) throw new Error('Enter on "Delete typed-device" opened no dialog, three times')
      await del.focus()
      await page.keyboard.press('Enter')
      await dialog('Delete the ban').waitFor({ timeout: 5000 }).catch(() => {})
    }
    const confirmDelete = dialog('Delete the ban').getByRole('button', { name: 'Delete' })
    await confirmDelete.focus()
    await page.keyboard.press('Enter')
    await page.getByText('Nobody is banned.').waitFor()
  }, 60_000)
})
