/**
 * A real browser for the dashboard's tests: Debian's Chromium (`/usr/bin/chromium`, or
 * `CHROMIUM_PATH`), headless, driven by playwright-core. `.ci/run` installs the `chromium`
 * package when missing; elsewhere a missing Chromium skips the suite and says so (as the
 * real-server harness does), in CI it fails.
 *
 * `watchPage` records what the bar forbids on every page: console errors, uncaught page
 * errors, failed requests and answers of 400 or more (the ones a test expects are passed in).
 */
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { PROJECT_ROOT } from './process.js'

/** Where Chromium is. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** Where the runs write a screenshot of each page (not committed: `.gitignore`). */
export const SCREENSHOT_DIR = join(PROJECT_ROOT, 'test-results', 'dashboard')

/** `describe` when Chromium is installed (or in CI, where its absence fails); otherwise skipped with the reason. */
export function describeWithBrowser (title: string, fn: () => void): void {
  if (!existsSync(CHROMIUM_PATH) && process.env.CI === undefined) {
    console.warn(`skipping "${title}": no Chromium at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH)`)
    describe.skip(title, fn)
    return
  }
  describe(title, fn)
}

/** Starts headless Chromium (without its sandbox when running as root, as CI does). */
export async function launchBrowser (): Promise<Browser> {
  const root = typeof process.getuid === 'function' && process.getuid() === 0
  return await chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: root ? ['--no-sandbox'] : []
  })
}

/** What went wrong on a page while it was watched. */
export interface PageProblems {
  /** Console errors, page errors, failed requests, unexpected 4xx/5xx answers: each a line. */
  problems: string[]
  /** Answers with these statuses for paths matching the pattern are expected (e.g. a wrong password's 401). */
  expect: (status: number, path: RegExp) => void
}

/** Watches `page` for console errors, page errors, failed requests and error answers. */
export function watchPage (page: Page): PageProblems {
  const problems: string[] = []
  const expected: Array<{ status: number, path: RegExp }> = []
  page.on('console', (msg) => {
    // Chromium logs every 4xx/5xx answer as a console error: judged below with the expected ones
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource: the server responded with a status of')) problems.push(`console: ${msg.text()}`)
  })
  page.on('pageerror', (err) => { problems.push(`page error: ${err.message}`) })
  page.on('requestfailed', (req) => {
    const failure = req.failure()?.errorText ?? ''
    // a page left while its polls were in flight aborts them: not a failure of the page
    if (failure.includes('ERR_ABORTED')) return
    problems.push(`request failed: ${req.method()} ${req.url()} ${failure}`)
  })
  page.on('response', (res) => {
    if (res.status() < 400) return
    const path = new URL(res.url()).pathname
    if (expected.some(e => e.status === res.status() && e.path.test(path))) return
    problems.push(`answer ${res.status()}: ${res.request().method()} ${res.url()}`)
  })
  return { problems, expect: (status, path) => { expected.push({ status, path }) } }
}

/** A new browser context (its own cookies) and page on `baseUrl`, watched. */
export async function openPage (browser: Browser, baseUrl: string): Promise<{ context: BrowserContext, page: Page, watch: PageProblems }> {
  const context = await browser.newContext({ baseURL: baseUrl, viewport: { width: 1366, height: 900 } })
  const page = await context.newPage()
  const watch = watchPage(page)
  return { context, page, watch }
}

/** Signs in through the sign-in page; resolves when the app shows the page it went to. */
export async function signInThroughPage (page: Page, username: string, password: string): Promise<void> {
  await page.goto('/#/login')
  await page.getByLabel('User name').fill(username)
  await page.getByLabel('Password', { exact: true }).fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(url => !url.hash.startsWith('#/login'))
}

/** Writes a screenshot of `page` as `<name>.png` under {@link SCREENSHOT_DIR}. */
export async function screenshot (page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true })
  const file = join(SCREENSHOT_DIR, `${name}.png`)
  await page.screenshot({ path: file, fullPage: true })
  return file
}
