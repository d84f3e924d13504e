/**
 * The dashboard in a real browser (headless Chromium): sign in with the configured password
 * and with the generated one printed at first start, change it when asked, wrong passwords
 * with the spec's codes on the page, the overview of a node; no console error and no failed
 * request on any of it.
 */
import type { Browser } from 'playwright-core'
import { describeWithBrowser, launchBrowser, openPage, screenshot, signInThroughPage } from '../helpers/browser.js'
import { startDashNode, type DashNode } from '../helpers/dashboard.js'

describeWithBrowser('the dashboard in a browser: sign-in', () => {
  let browser: Browser
  const nodes: DashNode[] = []
  beforeAll(async () => { browser = await launchBrowser() })
  afterAll(async () => {
    await browser?.close()
    for (const n of nodes) await n.destroy()
  })

  it('signs in with the generated password printed at first start, asks for a new one, and shows the overview', async () => {
    const n = await startDashNode({ 'dashboard.default_user.password': '' })
    nodes.push(n)
    const line = n.lines.find(l => l.includes('generated password'))
    expect(line).toBeDefined()
    const generated = JSON.parse(line!).password as string
    const { page, watch, context } = await openPage(browser, n.url)
    await signInThroughPage(page, 'admin', generated)
    expect(page.url()).toContain('#/account')
    await page.getByText('You are signed in with the first password of admin').waitFor()
    await screenshot(page, 'account')
    await page.getByLabel('Current password').fill(generated)
    await page.getByLabel('New password', { exact: true }).fill('my-own-password-1')
    await page.getByLabel('New password again').fill('my-own-password-1')
    await page.getByRole('button', { name: 'Change password' }).click()
    await page.waitForURL(url => url.hash === '#/')
    expect(await page.getByText('still has its first password').count()).toBe(0)
    await page.getByRole('table', { name: 'Nodes' }).getByText(n.node.name).waitFor()
    await screenshot(page, 'overview')
    expect(watch.problems).toEqual([])
    await context.close()
  }, 60_000)

  it('shows the spec\'s codes for a wrong password and an empty field, then signs in with the configured one', async () => {
    const n = await startDashNode({ 'dashboard.default_user.password': 'configured-pass-1' })
    nodes.push(n)
    const { page, watch, context } = await openPage(browser, n.url)
    watch.expect(401, /^\/api\/v3\/auth$/)
    watch.expect(400, /^\/api\/v3\/auth$/)
    await page.goto('/')
    await page.waitForURL(url => url.hash.startsWith('#/login'))
    await page.getByLabel('User name').fill('admin')
    await page.getByLabel('Password', { exact: true }).fill('wrong-password')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await expectAlert(page, '(code 103)')
    await screenshot(page, 'login')
    await signInThroughPage(page, 'admin', 'configured-pass-1')
    expect(page.url()).toContain('#/account')
    // not forced: every other page reminds until the password is changed
    await page.goto('/#/')
    await page.getByRole('alert').filter({ hasText: 'admin still has its first password' }).waitFor()
    expect(watch.problems).toEqual([])
    await context.close()
  }, 60_000)
})

async function expectAlert (page: import('playwright-core').Page, text: string): Promise<void> {
  await page.getByRole('alert').filter({ hasText: text }).waitFor()
}
