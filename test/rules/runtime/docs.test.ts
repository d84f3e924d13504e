/** docs/rules.md lists every SQL function, action and resource type the code defines. */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { listFunctions } from '../../../rules/funcs/index.js'
import { createBuiltInRegistry } from '../../../rules/engine.js'
import { PROJECT_ROOT } from '../../helpers/process.js'

const doc = readFileSync(join(PROJECT_ROOT, 'docs/rules.md'), 'utf8')

describe('docs/rules.md', () => {
  it('lists every SQL function of rules/funcs', () => {
    const missing = listFunctions().map(f => f.name).filter(name => !new RegExp(`\\b${name}/`).test(doc))
    expect(missing).toEqual([])
  })

  it('names every action (and its aliases) and every resource type', () => {
    const registry = createBuiltInRegistry()
    const names = [...registry.actions().flatMap(a => [a.name, ...a.aliases]), ...registry.resourceTypes().map(t => t.name)]
    expect(names.filter(name => !doc.includes(`\`${name}\``))).toEqual([])
  })

  it('names every param of the rule engine\'s own actions and resource types (web_hook\'s keys ...)', () => {
    const registry = createBuiltInRegistry()
    const params = [...registry.actions(), ...registry.resourceTypes()].flatMap(d => Object.keys(d.params).map(p => `${d.name}: ${p}`))
    expect(params.filter(p => !doc.includes(`\`${p.split(': ')[1]}\``))).toEqual([])
  })
})
