// Loaded with `node --import` into a node under test: records every npm package the process
// resolves a module of, and every module of the project's own build (as `dist/rules/sql/compile.js`),
// and writes them (one per line: the packages' names, then the dist/ paths) to
// $LOADED_PACKAGES_FILE when the process exits. Used by test/e2e/idle-node-packages.test.ts.
import { registerHooks } from 'node:module'
import { writeFileSync } from 'node:fs'

const seen = new Set()
const own = new Set()
registerHooks({
  resolve (specifier, context, next) {
    const resolved = next(specifier, context)
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(resolved.url)
    if (m !== null) seen.add(m[1])
    else {
      const d = /\/(dist\/.+)$/.exec(resolved.url)
      if (d !== null) own.add(d[1])
    }
    return resolved
  }
})
process.on('exit', () => {
  if (process.env.LOADED_PACKAGES_FILE) writeFileSync(process.env.LOADED_PACKAGES_FILE, [...seen].sort().concat([...own].sort()).join('\n') + '\n')
})
