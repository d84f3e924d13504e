/**
 * Every page of the dashboard's menu, visited in a real browser on one node: no console error,
 * no failed request; every input, select and text area has a label (an accessible name), every
 * button a name; and the keyboard reaches the page: Tab moves the focus through visible
 * elements, each showing a focus ring. The menu comes from `dashboard/src/nav.ts`, so a page
 * added later is checked with no change here.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { NAV } from '../../dashboard/src/nav.js'
import { describeWithBrowser, launchBrowser, openPage, type PageProblems } from '../helpers/browser.js'
import { startDashNode, signInAsAdmin, type DashNode } from '../helpers/dashboard.js'

/** Controls without an accessible name (label, aria-label, aria-labelledby or, for buttons, text). */
async function unnamed (page: Page): Promise<string[]> {
  return await page.locator('input:not([type=hidden]):not([hidden]), select, textarea, button').evaluateAll((els) => els
    .filter((el: any) => {
      if (el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || el.getAttribute('title')) return false
      if (el.tagName === 'BUTTON') return (el.textContent ?? '').trim() === ''
      return (el.labels?.length ?? 0) === 0
    })
    .map((el: any) => String(el.outerHTML).slice(0, 160)))
}

/**
 * Presses Tab `times` times from the start of `from` (the menu, or the page's own content);
 * each focused element must be visible and show a focus ring.
 */
async function tabThrough (page: Page, from: string, times: number): Promise<string[]> {
  const bad: string[] = []
  await page.locator(from).click({ position: { x: 1, y: 1 } })
  for (let i = 0; i < times; i++) {
    await page.keyboard.press('Tab')
    const focus = await page.evaluate(() => {
      const el: any = (globalThis as any).document.activeElement
      // a part inside a native control (a date field's calendar button) has the focus: the
      // browser draws that part's ring itself, and the field does not match :focus
      if (el === null || el.tagName === 'BODY' || !el.matches(':focus')) return null
      const style = (globalThis as any).getComputedStyle(el)
      const box = el.getBoundingClientRect()
      return {
        what: String(el.outerHTML).slice(0, 120),
        visible: box.width > 0 && box.height > 0 && style.visibility !== 'hidden',
        ring: style.outlineStyle !== 'none' || style.boxShadow !== 'none'
      }
    })
    if (focus === null) continue
    if (!focus.visible || !focus.ring) bad.push(`${focus.visible ? 'no focus ring' : 'invisible'}: ${focus.what}`)
  }
  return bad
}

describeWithBrowser('the dashboard in a browser: every page', () => {
  let dash: DashNode
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let watch: PageProblems
  beforeAll(async () => {
    dash = await startDashNode()
    browser = await launchBrowser()
    ;({ context, page, watch } = await openPage(browser, dash.url))
    await signInAsAdmin(page)
  }, 60_000)
  afterAll(async () => {
    await context?.close()
    await browser?.close()
    await dash?.destroy()
  })

  const pages = NAV.filter(p => p.hidden !== true)
  it.each(pages.map(p => [p.title, p.path]))('%s (#%s): loads cleanly, labelled, reachable with the keyboard', async (title, path) => {
    await page.goto(`/#${path}`)
    await page.getByRole('heading', { name: title, exact: true, level: 1 }).waitFor()
    await page.waitForLoadState('networkidle')
    expect(await unnamed(page)).toEqual([])
    // the menu once, then each page's own content
    expect(await tabThrough(page, path === '/' ? 'nav.side' : 'main.content', 30)).toEqual([])
    expect(watch.problems).toEqual([])
  }, 30_000)
})
