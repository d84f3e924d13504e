import { readFileSync, existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The directory of Starling's package.json: found by walking up, so it works from sources and from dist/. */
export function packageRoot (): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const candidate = join(dir, 'package.json')
    if (existsSync(candidate) && JSON.parse(readFileSync(candidate, 'utf8')).name === 'starling') return dir
    const parent = dirname(dir)
    if (parent === dir) throw new Error('cannot find Starling\'s package.json above ' + fileURLToPath(import.meta.url))
    dir = parent
  }
}

/**
 * Starling's version in the one form every surface shows (spec, Versioning: `v<major>.<minor>.<patch>`,
 * as EMQ X 3.x's own versions read): package.json's `0.1.0` is `v0.1.0` in the CLI, the API,
 * `$SYS`, plugin entries and the start banner.
 */
export const VERSION: string = 'v' + (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')).version as string)
