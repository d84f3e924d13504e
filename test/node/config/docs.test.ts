import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { configKeys, renderConfigurationDoc, renderDefaultConfFile } from '../../../node/config/index.js'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const HOW = 'regenerate with UPDATE_CONFIG_DOCS=1 NODE_OPTIONS=--experimental-vm-modules npx jest test/node/config/docs'

/** Committed file vs. what the schema renders; with UPDATE_CONFIG_DOCS=1 the file is rewritten. */
function checkGenerated (relPath: string, rendered: string): void {
  const path = root + relPath
  if (process.env.UPDATE_CONFIG_DOCS === '1') writeFileSync(path, rendered)
  const committed = readFileSync(path, 'utf8')
  if (committed !== rendered) throw new Error(`${relPath} is out of date with node/config/schema.ts; ${HOW}`)
}

describe('generated configuration documents', () => {
  it('keeps docs/configuration.md in step with the schema', () => {
    checkGenerated('docs/configuration.md', renderConfigurationDoc())
  })

  it('keeps the shipped etc/starling.conf in step with the schema', () => {
    checkGenerated('etc/starling.conf', renderDefaultConfFile())
  })

  it('documents every key with its type, default, environment variable and live flag', () => {
    const doc = readFileSync(root + 'docs/configuration.md', 'utf8')
    for (const k of configKeys()) {
      const row = doc.split('\n').find((line) => line.startsWith(`| \`${k.key}\` |`))
      expect(row).toBeDefined()
      expect(row).toContain(` ${k.type} `)
      expect(row).toMatch(k.live ? /\| live \|/ : /\| restart \|/)
    }
    expect(doc).toContain('STARLING_LISTENER__TCP__EXTERNAL')
    expect(doc).toContain('STARLING_CONFIG')
  })

  it('writes a ## comment above every key of the shipped file', () => {
    const lines = readFileSync(root + 'etc/starling.conf', 'utf8').split('\n')
    for (const k of configKeys()) {
      const at = lines.findIndex((line) => line === `${k.key} =` || line.startsWith(`${k.key} = `))
      expect(at).toBeGreaterThan(0)
      expect(lines[at - 1]).toMatch(/^## /)
    }
  })
})
