/**
 * The browser app's files (`dashboard/`, built by Vite into `dist/dashboard/` by `npm run
 * build`): served on the dashboard listener without sign-in, as the only unauthenticated
 * answers besides sign-in. The hashed files under `assets/` are cached for a year (their name
 * changes with their content); `index.html` is revalidated on every visit, so a new build is
 * seen at the next load. When the app was not built, `/` says how to build it.
 */
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import express, { type Router } from 'express'

/** The page served at `/` when the app is not built. */
const NOT_BUILT_PAGE = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Starling dashboard</title></head>\n' +
  '<body><h1>Starling dashboard</h1><p>The web pages are not built: run <code>npm run build</code> in the ' +
  'Starling folder and reload. The dashboard API is served here under <code>/api/v3/</code> (docs/dashboard.md).</p></body></html>\n'

/**
 * The folder of the built app: `dist/dashboard/` of the package this module belongs to (found
 * by walking up to its package.json, so it is the same from `dist/plugins/dashboard/` and from
 * the sources the tests run), or undefined when it holds no `index.html`.
 */
export function builtAppDir (from: string = fileURLToPath(import.meta.url)): string | undefined {
  let dir = dirname(from)
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir)
    if (up === dir) return undefined
    dir = up
  }
  const app = join(dir, 'dist', 'dashboard')
  return existsSync(join(app, 'index.html')) ? app : undefined
}

/** The router serving the app in `dir` (or the not-built page). */
export function staticFiles (dir: string | undefined = builtAppDir()): Router {
  const router = express.Router()
  if (dir === undefined) {
    router.get('/', (_req, res) => { res.type('html').send(NOT_BUILT_PAGE) })
    return router
  }
  router.use('/assets', express.static(join(dir, 'assets'), { immutable: true, maxAge: '365d', index: false }))
  router.use(express.static(dir, {
    index: 'index.html',
    setHeaders: (res, path) => { if (path.endsWith('.html')) res.set('Cache-Control', 'no-cache') }
  }))
  return router
}
