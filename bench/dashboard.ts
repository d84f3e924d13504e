/**
 * `npm run bench:dashboard`: what open dashboards cost the node (issue
 * 21's budget: five dashboards on the overview at its 5 s refresh cost under 2% of one core).
 * Run by hand, not in CI; numbers in docs/performance.md, "Dashboard".
 *
 * One node (`bin/starling` as a separate process, as bench/broker-process.ts starts it, with
 * its dashboard on a known port) is left to settle; then its CPU time (utime + stime from
 * /proc/<pid>/stat) is measured over D seconds three times: with no browser page open, with
 * P pages of headless Chromium signed in and left on the overview (each polling /nodes,
 * /stats, /alarms/present and /monitor/counters every 5 s), and with none again. The cost of
 * the pages is their window's CPU minus the mean of the two idle windows. The first-visit
 * budget (JS+CSS gzipped, time to the nodes table) is asserted by
 * test/dashboard/overview.test.ts, which prints its figures.
 *
 * Exit code 1 when the pages cost more than the budget.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Command } from 'commander'
import { chromium, type Browser, type BrowserContext } from 'playwright-core'
import { freePort, starlingTarget, startBroker, type BrokerTarget } from './broker-process.js'
import { clockTicksPerSecond, readProcessTree } from './proc-stats.js'

const benchDir = path.dirname(fileURLToPath(import.meta.url))
/** dist/bench/dashboard.js → repository root. */
const repoRoot = path.resolve(benchDir, '..', '..')

/** The budget: percent of one core for the open pages. */
const BUDGET_PERCENT = 2
const PASSWORD = 'bench-dashboard-1'

const program = new Command('bench:dashboard')
  .description('CPU of a node with dashboards open on the overview, beside the same node with none')
  .option('--pages <n>', 'browser pages open on the overview', '5')
  .option('--seconds <n>', 'length of each measured window', '60')
  .option('--settle <n>', 'seconds to wait after start and after opening the pages', '10')
  .option('--chromium <path>', 'Chromium to drive', process.env.CHROMIUM_PATH ?? '/usr/bin/chromium')
  .parse()

const opts = program.opts<{ pages: string, seconds: string, settle: string, chromium: string }>()

/** Starling with its dashboard on `dashboardPort` and a known admin password. */
function dashboardTarget (dashboardPort: number): BrokerTarget {
  return starlingTarget(repoRoot, {
    STARLING_DASHBOARD__LISTENER__HTTP: `127.0.0.1:${dashboardPort}`,
    STARLING_DASHBOARD__DEFAULT_USER__PASSWORD: PASSWORD
  })
}

const sleep = async (ms: number): Promise<void> => { await new Promise(resolve => setTimeout(resolve, ms)) }

/** Percent of one core `pid` used over the next `seconds`. */
async function cpuPercent (pid: number, seconds: number): Promise<number> {
  const before = readProcessTree(pid).cpuTicks
  const t0 = performance.now()
  await sleep(seconds * 1000)
  const ticks = readProcessTree(pid).cpuTicks - before
  const elapsed = (performance.now() - t0) / 1000
  return ticks / clockTicksPerSecond() / elapsed * 100
}

/** A page signed in as admin and left on the overview with the nodes table filled. */
async function openOverview (browser: Browser, url: string): Promise<BrowserContext> {
  const context = await browser.newContext({ baseURL: url })
  const page = await context.newPage()
  await page.goto('/#/login')
  await page.getByLabel('User name').fill('admin')
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL(u => !u.hash.startsWith('#/login'))
  await page.goto('/#/')
  // runs in the page (globalThis there is the window: this program is compiled without the DOM's types)
  await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('table[aria-label="Nodes"] tbody tr').length > 0)
  return context
}

async function main (): Promise<void> {
  const pages = Number(opts.pages)
  const seconds = Number(opts.seconds)
  const settle = Number(opts.settle)
  const dashboardPort = await freePort()
  const target = dashboardTarget(dashboardPort)
  const why = target.unavailable()
  if (why !== null) throw new Error(why)
  const node = await startBroker(target, 4096, repoRoot)
  const browser = await chromium.launch({ executablePath: opts.chromium, headless: true, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] })
  try {
    const url = `http://127.0.0.1:${dashboardPort}`
    console.log(`node pid ${node.pid}, dashboard ${url}; settling ${settle} s`)
    await sleep(settle * 1000)
    const idleBefore = await cpuPercent(node.pid, seconds)
    console.log(`no page open: ${idleBefore.toFixed(2)}% of one core over ${seconds} s`)
    const contexts: BrowserContext[] = []
    for (let i = 0; i < pages; i++) contexts.push(await openOverview(browser, url))
    await sleep(settle * 1000)
    const open = await cpuPercent(node.pid, seconds)
    console.log(`${pages} pages on the overview: ${open.toFixed(2)}% of one core over ${seconds} s`)
    for (const c of contexts) await c.close()
    await sleep(settle * 1000)
    const idleAfter = await cpuPercent(node.pid, seconds)
    console.log(`no page open again: ${idleAfter.toFixed(2)}% of one core over ${seconds} s`)
    const cost = open - (idleBefore + idleAfter) / 2
    console.log(`\n${pages} dashboards at a 5 s refresh cost the node ${cost.toFixed(2)}% of one core (budget ${BUDGET_PERCENT}%)`)
    if (cost > BUDGET_PERCENT) process.exitCode = 1
  } finally {
    await browser.close()
    await node.stop()
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
