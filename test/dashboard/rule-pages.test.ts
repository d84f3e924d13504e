/**
 * The rule engine pages in a real browser (headless Chromium) against a real node: a rule
 * created through the form (the SQL editor, the tester with a context, a republish action
 * from the action picker) fires for an mqtt.js client and shows its hit on the Rules list,
 * then is disabled and deleted; a rule with a fallback and on_action_failed made and edited in
 * the form, its metrics reset from the list; a web_hook resource created on the Resources page
 * against a local HTTP server, one created inline from the action picker, one reconnected; an avro schema created,
 * viewed and deleted; every page visited with no console error (CSP violations included),
 * no failed request and a screenshot.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import mqtt, { type MqttClient } from 'mqtt'
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { describeWithBrowser, launchBrowser, openPage, screenshot, type PageProblems } from '../helpers/browser.js'
import { signInAsAdmin, startDashNode, type DashNode } from '../helpers/dashboard.js'
import { apiRequest } from '../helpers/node.js'

describeWithBrowser('the dashboard in a browser: rule engine pages', () => {
  let browser: Browser
  let n: DashNode
  let context: BrowserContext
  let page: Page
  let watch: PageProblems
  let hooks: Server
  let hookUrl: string
  const clients: MqttClient[] = []

  beforeAll(async () => {
    hooks = createServer((req, res) => { req.resume(); req.on('end', () => res.end('ok')) })
    await new Promise<void>(resolve => hooks.listen(0, '127.0.0.1', resolve))
    hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`
    n = await startDashNode()
    browser = await launchBrowser()
    ;({ context, page, watch } = await openPage(browser, n.url))
    await signInAsAdmin(page)
  }, 60_000)

  afterAll(async () => {
    for (const c of clients) c.end(true)
    await context?.close()
    await browser?.close()
    await n?.destroy()
    await new Promise(resolve => hooks?.close(resolve))
  })

  it('creates a rule through the form, tests its SQL, sees it republish and count the hit, then disables and deletes it', async () => {
    watch.expect(400, /^\/api\/v3\/rules$/) // the invalid SQL below
    watch.expect(404, /^\/api\/v3\/rules$/) // the tester's "SQL Not Match"
    await page.goto('/#/rules')
    await page.getByRole('link', { name: 'Create', exact: true }).click()
    await page.waitForURL(url => url.hash === '#/rules/new')
    const editor = page.getByRole('textbox', { name: 'SQL' })
    await setSql(page, editor, 'SELECT x FROM')
    await page.getByRole('button', { name: 'Create rule' }).click()
    await page.getByRole('alert').filter({ hasText: 'invalid SQL' }).filter({ hasText: '(code 102)' }).waitFor()

    await setSql(page, editor, 'SELECT payload.x as x FROM "t/#"')
    await page.getByText('Event: message.publish on topics matching t/#').waitFor()
    // the tester: a context matching the FROM, then one that does not
    expect(await page.getByLabel('Topic', { exact: true }).inputValue()).toBe('t/1')
    await page.getByLabel('Payload', { exact: true }).fill('{"x": 42}')
    await page.getByRole('button', { name: 'Test', exact: true }).click()
    await expectText(page.getByLabel('Test output'), '"x": 42')
    await page.getByLabel('Topic', { exact: true }).fill('other/1')
    await page.getByRole('button', { name: 'Test', exact: true }).click()
    await page.getByRole('alert').filter({ hasText: 'SQL Not Match' }).waitFor()

    // the action picker: republish with its params drawn from GET /actions
    await page.getByRole('button', { name: 'Add action' }).click()
    const dialog = page.getByRole('dialog', { name: 'Add an action' })
    await dialog.getByLabel('Action', { exact: true }).selectOption('republish')
    await dialog.getByLabel('Target Topic').fill('out/${x}')
    await expectValue(dialog.getByLabel('Payload Template'), '${payload}')
    // the selected data has x only: ${payload} would be empty
    await dialog.getByLabel('Payload Template').fill('x=${x}')
    await screenshot(page, 'rule-action-picker')
    await dialog.getByRole('button', { name: 'Add action' }).click()
    await page.getByRole('table', { name: 'Actions of the rule' }).getByText('target_topic: out/${x}').waitFor()
    await page.getByLabel('Description').fill('republish x')
    await screenshot(page, 'rule-edit')
    await page.getByRole('button', { name: 'Create rule' }).click()
    await page.waitForURL(url => url.hash === '#/rules')
    const row = page.getByRole('table', { name: 'Rules' }).getByRole('row').filter({ hasText: 'payload.x as x' })
    await row.waitFor()
    const id = (await row.getAttribute('data-rule'))!

    // it fires: mqtt.js subscribes to the target and publishes to t/1
    const client = mqtt.connect({ host: '127.0.0.1', port: n.node.port('mqtt:tcp'), reconnectPeriod: 0 })
    clients.push(client)
    await new Promise<void>((resolve, reject) => { client.once('connect', () => resolve()); client.once('error', reject) })
    await client.subscribeAsync('out/#')
    const got = new Promise<{ topic: string, payload: string }>((resolve) => {
      client.once('message', (topic, payload) => resolve({ topic, payload: payload.toString() }))
    })
    await client.publishAsync('t/1', '{"x": 7}')
    expect(await got).toEqual({ topic: 'out/7', payload: 'x=7' })
    // the list refreshes every 5 s: the hit shows
    await row.getByText(/matched\s+1\b/).waitFor({ timeout: 15_000 })
    await screenshot(page, 'rules')

    // editing: the stored SQL and actions come back; a changed description is saved
    await page.getByRole('link', { name: `Edit ${id}` }).click()
    await page.getByRole('heading', { name: `Rule ${id}` }).waitFor()
    await page.getByRole('table', { name: 'Actions of the rule' }).getByText('target_topic: out/${x}').waitFor()
    await expectText(page.getByRole('textbox', { name: 'SQL' }), 'payload.x as x')
    await page.getByLabel('Description').fill('republish x, edited')
    await page.getByRole('button', { name: 'Save rule' }).click()
    await page.waitForURL(url => url.hash === '#/rules')
    await row.getByText('republish x, edited').waitFor()

    await page.getByRole('button', { name: `Disable ${id}` }).click()
    await row.getByText('Disabled', { exact: true }).waitFor()
    await page.getByRole('button', { name: `Delete ${id}` }).click()
    await page.getByRole('dialog', { name: 'Delete rule' }).getByRole('button', { name: 'Delete' }).click()
    await row.waitFor({ state: 'detached' })
    expect(watch.problems).toEqual([])
  }, 90_000)

  it('creates a web_hook resource on the Resources page and deletes it; creates one inline from the action picker', async () => {
    await page.goto('/#/resources')
    await page.getByRole('heading', { name: 'Resources', level: 2 }).waitFor()
    await page.getByRole('button', { name: 'Create', exact: true }).click()
    await page.getByLabel('Resource type').selectOption('web_hook')
    await page.getByLabel('Name (optional').fill('hook1')
    await page.getByLabel('Request URL').fill(hookUrl)
    await expectValue(page.getByLabel('Request Timeout'), '5s')
    await page.getByLabel('Request Method').selectOption('PUT')
    await page.getByRole('button', { name: 'Create resource' }).click()
    const row = page.getByRole('table', { name: 'Resources' }).getByRole('row').filter({ hasText: 'web_hook:hook1' })
    await row.getByText('alive', { exact: true }).waitFor()
    await expectText(row, '"method":"PUT"')
    await screenshot(page, 'resources')
    await page.getByRole('button', { name: 'Delete web_hook:hook1' }).click()
    await page.getByRole('dialog', { name: 'Delete resource' }).getByRole('button', { name: 'Delete' }).click()
    await row.waitFor({ state: 'detached' })

    // inline from the rule editor: an action that needs a resource offers to create one
    await page.goto('/#/rules/new')
    await page.getByRole('heading', { name: 'New rule' }).waitFor()
    await page.getByRole('button', { name: 'Add action' }).click()
    const dialog = page.getByRole('dialog', { name: 'Add an action' })
    await dialog.getByLabel('Action', { exact: true }).selectOption('data_to_webserver')
    await dialog.getByRole('button', { name: 'Create a resource' }).click()
    await dialog.getByLabel('Name (optional').fill('inline')
    await dialog.getByLabel('Request URL').fill(hookUrl)
    await dialog.getByRole('button', { name: 'Create resource' }).click()
    await expectValue(dialog.getByLabel(/^Resource \(/), 'web_hook:inline')
    await dialog.getByRole('button', { name: 'Add action' }).click()
    await page.getByRole('table', { name: 'Actions of the rule' }).getByText('$resource: web_hook:inline').waitFor()
    await page.goto('/#/resources')
    await page.getByRole('button', { name: 'Delete web_hook:inline' }).click()
    await page.getByRole('dialog', { name: 'Delete resource' }).getByRole('button', { name: 'Delete' }).click()
    await page.getByText('No resource yet.').waitFor()
    expect(watch.problems).toEqual([])
  }, 60_000)

  it('creates, views and deletes an avro schema', async () => {
    await page.goto('/#/schemas')
    await page.getByRole('heading', { name: 'Schemas', level: 2 }).waitFor()
    await page.getByRole('button', { name: 'Create', exact: true }).click()
    await page.getByLabel('Name').fill('sensor')
    await page.getByLabel('Parser type').selectOption('avro')
    await page.getByLabel('Schema', { exact: true }).fill('{"type": "record", "name": "Sensor", "fields": [{"name": "temp", "type": "double"}]}')
    await page.getByLabel('Description').fill('what the sensors publish')
    await page.getByRole('button', { name: 'Create schema' }).click()
    const row = page.getByRole('table', { name: 'Schemas' }).getByRole('row').filter({ hasText: 'sensor' })
    await row.getByText('what the sensors publish').waitFor()
    await screenshot(page, 'schemas')
    await page.getByRole('button', { name: 'View sensor' }).click()
    const view = page.getByRole('dialog', { name: 'Schema sensor' })
    await expectText(view.getByLabel('Schema text'), '"name": "temp"')
    await view.getByRole('button', { name: 'Close' }).click()
    await page.getByRole('button', { name: 'Delete sensor' }).click()
    await page.getByRole('dialog', { name: 'Delete schema' }).getByRole('button', { name: 'Delete' }).click()
    await page.getByText('No schema yet.').waitFor()
    expect(watch.problems).toEqual([])
  }, 60_000)

  it('adds a fallback and on_action_failed in the form, keeps them when the rule is edited, and resets its metrics from the list', async () => {
    await page.goto('/#/rules/new')
    await page.getByRole('heading', { name: 'New rule' }).waitFor()
    await setSql(page, page.getByRole('textbox', { name: 'SQL' }), 'SELECT payload FROM "fb/#"')
    await page.getByRole('button', { name: 'Add action' }).click()
    const dialog = page.getByRole('dialog', { name: 'Add an action' })
    await dialog.getByLabel('Action', { exact: true }).selectOption('republish')
    await dialog.getByLabel('Target Topic').fill('fb-out/1')
    await dialog.getByRole('button', { name: 'Add action' }).click()
    await page.getByRole('button', { name: 'Add a fallback to action 1 (republish)' }).click()
    const fallback = page.getByRole('dialog', { name: 'Add a fallback' })
    await fallback.getByLabel('Action', { exact: true }).selectOption('inspect')
    await fallback.getByRole('button', { name: 'Add action' }).click()
    await page.getByRole('table', { name: 'Actions of the rule' }).getByText('if it fails: inspect').waitFor()
    await page.getByLabel('When an action fails').selectOption('stop')
    await screenshot(page, 'rule-edit-fallback')
    await page.getByRole('button', { name: 'Create rule' }).click()
    await page.waitForURL(url => url.hash === '#/rules')
    const row = page.getByRole('table', { name: 'Rules' }).getByRole('row').filter({ hasText: 'fb/#' })
    await row.waitFor()
    const id = (await row.getAttribute('data-rule'))!
    const stored = async (): Promise<any> => (await apiRequest(n.node, `/rules/${encodeURIComponent(id)}`)).data
    expect(await stored()).toMatchObject({ on_action_failed: 'stop', actions: [{ name: 'republish', fallbacks: [{ name: 'inspect', fallbacks: [] }] }] })

    // edited (the action itself changed): the fallback and on_action_failed stay
    await page.getByRole('link', { name: `Edit ${id}` }).click()
    await page.getByRole('table', { name: 'Actions of the rule' }).getByText('if it fails: inspect').waitFor()
    await page.getByRole('button', { name: 'Edit action 1 (republish)' }).click()
    await page.getByRole('dialog', { name: 'Edit the action' }).getByLabel('Target Topic').fill('fb-out/2')
    await page.getByRole('dialog', { name: 'Edit the action' }).getByRole('button', { name: 'Save action' }).click()
    expect(await page.getByLabel('When an action fails').inputValue()).toBe('stop')
    await page.getByRole('button', { name: 'Save rule' }).click()
    await page.waitForURL(url => url.hash === '#/rules')
    expect(await stored()).toMatchObject({ on_action_failed: 'stop', actions: [{ params: { target_topic: 'fb-out/2' }, fallbacks: [{ name: 'inspect' }] }] })

    // a hit, then Reset metrics: back to zero on the list
    const client = mqtt.connect({ host: '127.0.0.1', port: n.node.port('mqtt:tcp'), reconnectPeriod: 0 })
    clients.push(client)
    await new Promise<void>((resolve, reject) => { client.once('connect', () => resolve()); client.once('error', reject) })
    await client.publishAsync('fb/1', 'x')
    await row.getByText(/matched\s+1\b/).waitFor({ timeout: 15_000 })
    await page.getByRole('button', { name: `Reset the metrics of ${id}` }).click()
    await page.getByText(`Metrics of rule ${id} reset`).waitFor()
    await row.getByText(/matched\s+0\b/).waitFor()
    expect((await stored()).metrics[0].matched).toBe(0)
    await page.getByRole('button', { name: `Delete ${id}` }).click()
    await page.getByRole('dialog', { name: 'Delete rule' }).getByRole('button', { name: 'Delete' }).click()
    await row.waitFor({ state: 'detached' })
    expect(watch.problems).toEqual([])
  }, 60_000)

  it('reconnects a resource from the Resources page', async () => {
    expect((await apiRequest(n.node, '/resources', 'POST', { name: 'rc', type: 'web_hook', config: { url: hookUrl } })).code).toBe(0)
    await page.goto('/#/resources')
    const row = page.getByRole('table', { name: 'Resources' }).getByRole('row').filter({ hasText: 'web_hook:rc' })
    await row.getByText('alive', { exact: true }).waitFor()
    await page.getByRole('button', { name: 'Reconnect web_hook:rc' }).click()
    await page.getByText('Resource web_hook:rc reconnected').waitFor()
    await row.getByText('alive', { exact: true }).waitFor()
    await page.getByRole('button', { name: 'Delete web_hook:rc' }).click()
    await page.getByRole('dialog', { name: 'Delete resource' }).getByRole('button', { name: 'Delete' }).click()
    await page.getByText('No resource yet.').waitFor()
    expect(watch.problems).toEqual([])
  }, 60_000)

  it('shows every rule engine page with no console error, CSP violation or failed request', async () => {
    for (const [path, name, ready] of [
      ['/#/rules', 'rules-empty', 'No rule yet.'],
      ['/#/rules/new', 'rule-new', 'Test the SQL'],
      ['/#/resources', 'resources-empty', 'No resource yet.'],
      ['/#/schemas', 'schemas-empty', 'No schema yet.']
    ]) {
      await page.goto(path)
      await page.getByText(ready).waitFor()
      await screenshot(page, name)
    }
    // the editor is styled (its constructed style sheet applied) under style-src 'self'
    const gutter = await page.goto('/#/rules/new').then(async () => await page.locator('.cm-gutters').evaluate(el => (globalThis as any).getComputedStyle(el).backgroundColor as string))
    expect(gutter).toBe('rgb(240, 244, 248)')
    expect(watch.problems).toEqual([])
  }, 60_000)
})

/** Replaces the SQL editor's text as a user would: select all, then type. */
async function setSql (page: Page, editor: Locator, text: string): Promise<void> {
  await editor.click()
  await page.keyboard.press('ControlOrMeta+a')
  await page.keyboard.insertText(text)
}

async function expectText (locator: Locator, text: string): Promise<void> {
  await locator.filter({ hasText: text }).waitFor()
}

/** Waits (up to 5 s) for a field to hold `value`, then checks it. */
async function expectValue (locator: Locator, value: string): Promise<void> {
  await locator.waitFor()
  const until = Date.now() + 5000
  while (await locator.inputValue() !== value && Date.now() < until) await new Promise(resolve => setTimeout(resolve, 50))
  expect(await locator.inputValue()).toBe(value)
}
