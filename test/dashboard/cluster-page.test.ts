/**
 * The dashboard's cluster page in a real browser (headless Chromium) with two real nodes:
 * one joins the other's cluster from the page (after a confirmation), both members show
 * running with their link up, the node leaves from the page, joins again and forces the
 * other out; a join that cannot be done shows the API's code. No console error, no failed
 * request; a screenshot.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { describeWithBrowser, launchBrowser, openPage, screenshot, type PageProblems } from '../helpers/browser.js'
import { signInAsAdmin, startDashNode, type DashNode } from '../helpers/dashboard.js'
import { waitFor } from '../helpers/node.js'

const A = 'pa@127.0.0.1'
const B = 'pb@127.0.0.1'

describeWithBrowser('the dashboard in a browser: the cluster page', () => {
  let browser: Browser
  let a: DashNode
  let b: DashNode
  let context: BrowserContext
  let page: Page
  let watch: PageProblems

  beforeAll(async () => {
    a = await startDashNode({ 'node.name': A, 'broker.sys_interval': '0' })
    b = await startDashNode({ 'node.name': B, 'broker.sys_interval': '0' })
    browser = await launchBrowser()
    ;({ context, page, watch } = await openPage(browser, a.url))
    await signInAsAdmin(page)
  }, 60_000)

  afterAll(async () => {
    await context?.close()
    await browser?.close()
    await b?.destroy()
    await a?.destroy()
  })

  afterEach(() => {
    expect(watch.problems).toEqual([])
  })

  const members = () => page.getByRole('table', { name: 'Cluster members' })
  const member = (node: string) => members().locator(`tr[data-node="${node}"]`)
  const bAddress = (): string => `${B}:${b.node.cluster.mesh.port}`

  /** Joins B's cluster from the page, through the confirmation. */
  async function joinB (): Promise<void> {
    await page.getByLabel('Node to join').fill(bAddress())
    await page.getByRole('button', { name: 'Join', exact: true }).click()
    const dialog = page.getByRole('dialog', { name: 'Join a cluster' })
    await dialog.getByText(`joins the cluster of ${bAddress()}`).waitFor()
    await dialog.getByRole('button', { name: 'Join', exact: true }).click()
    await linkedB()
  }

  /** Waits until B is listed running with its link up. */
  async function linkedB (): Promise<void> {
    await member(B).getByText('running', { exact: true }).waitFor()
    await member(B).getByText('up', { exact: true }).waitFor()
  }

  it('shows the node alone, then joins another node from the page: both members running, linked', async () => {
    await page.goto('/#/cluster')
    await member(A).filter({ hasText: 'this node' }).waitFor()
    expect(await members().locator('tbody tr').count()).toBe(1)
    // nothing to leave while alone
    expect(await page.getByRole('button', { name: 'Leave the cluster' }).isDisabled()).toBe(true)
    await joinB()
    await page.getByText(`${A} joined the cluster of ${bAddress()}`).waitFor()
    await waitFor(() => b.node.cluster.status().filter(m => m.status === 'running').length === 2, 'b to see both members')
    // the page stays signed in: its session is good on a node of the joined cluster
    await page.reload()
    await linkedB()
    await screenshot(page, 'cluster')
  }, 60_000)

  it('leaves the cluster from the page after a confirmation (Cancel changes nothing)', async () => {
    await page.getByRole('button', { name: 'Leave the cluster' }).click()
    const dialog = page.getByRole('dialog', { name: 'Leave the cluster' })
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await dialog.waitFor({ state: 'detached' })
    expect(a.node.cluster.status()).toHaveLength(2)
    await page.getByRole('button', { name: 'Leave the cluster' }).click()
    await dialog.getByRole('button', { name: 'Leave', exact: true }).click()
    await member(B).waitFor({ state: 'detached' })
    await page.getByText(`${A} left the cluster`).waitFor()
    await waitFor(() => b.node.cluster.status().length === 1, 'b to be alone')
  }, 60_000)

  it('forces a member out from the page', async () => {
    await joinB()
    await page.getByRole('button', { name: `Force ${B} to leave` }).click()
    const dialog = page.getByRole('dialog', { name: 'Force a member out' })
    await dialog.getByRole('button', { name: 'Force leave' }).click()
    await member(B).waitFor({ state: 'detached' })
    await page.getByText(`${B} was removed from the cluster`).waitFor()
    await waitFor(() => b.node.cluster.status().length === 1 && a.node.cluster.status().length === 1, 'both nodes alone')
  }, 60_000)

  it('shows the API\'s code when a join cannot be done', async () => {
    watch.expect(400, /^\/api\/v3\/cluster\/join$/)
    await page.getByLabel('Node to join').fill(A)
    await page.getByRole('button', { name: 'Join', exact: true }).click()
    await page.getByRole('dialog', { name: 'Join a cluster' }).getByRole('button', { name: 'Join', exact: true }).click()
    await page.getByRole('alert').filter({ hasText: '(code 102)' }).waitFor()
    await page.getByLabel('Node to join').fill('not a node name')
    await page.getByRole('button', { name: 'Join', exact: true }).click()
    await page.getByRole('dialog', { name: 'Join a cluster' }).getByRole('button', { name: 'Join', exact: true }).click()
    await page.getByRole('alert').filter({ hasText: '(code 108)' }).waitFor()
    expect(a.node.cluster.status()).toHaveLength(1)
  }, 60_000)
})
