import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  formatLoadedPlugins, parseLoadedPlugins, readLoadedPlugins, writeLoadedPlugins
} from '../../../node/plugins/loaded-plugins.js'
import { LoadedPluginsFileError } from '../../../node/plugins/errors.js'

describe('data/loaded_plugins', () => {
  it("reads EMQ X 4's {name, true|false}. lines, with spaces, comments and blank lines", () => {
    const text = '%% written by hand\n{svc_management, true}.\n  {svc_retainer,false}. % off\n\n{ svc_rule_engine , true } .\n'
    expect(parseLoadedPlugins(text, 'f')).toEqual([
      { name: 'svc_management', loaded: true },
      { name: 'svc_retainer', loaded: false },
      { name: 'svc_rule_engine', loaded: true }
    ])
  })

  it("reads EMQ X 3's bare name. lines as loaded", () => {
    expect(parseLoadedPlugins('svc_management.\nsvc_retainer.\n', 'f')).toEqual([
      { name: 'svc_management', loaded: true }, { name: 'svc_retainer', loaded: true }
    ])
  })

  it('lets a later line for the same plugin win', () => {
    expect(parseLoadedPlugins('{svc_a, true}.\n{svc_a, false}.\n', 'f')).toEqual([{ name: 'svc_a', loaded: false }])
  })

  it.each([
    ['{svc_a, true}', 'no final dot'],
    ['{svc_a, yes}.', 'not a boolean'],
    ['{svc_a}.', 'no state'],
    ['svc a.', 'a space in the name']
  ])('refuses %j (%s) naming the source and line', (line) => {
    expect(() => parseLoadedPlugins(`{svc_ok, true}.\n${line}\n`, 'data/loaded_plugins'))
      .toThrow(new LoadedPluginsFileError(`data/loaded_plugins:2: cannot read ${JSON.stringify(line)}; ` +
        'write one plugin per line as {svc_name, true}. or {svc_name, false}.'))
  })

  it('writes one {name, bool}. line per plugin, which reads back the same', () => {
    const entries = [{ name: 'svc_management', loaded: true }, { name: 'svc_retainer', loaded: false }]
    const text = formatLoadedPlugins(entries)
    expect(text).toBe('{svc_management, true}.\n{svc_retainer, false}.\n')
    expect(parseLoadedPlugins(text, 'f')).toEqual(entries)
  })

  it('reads undefined for a missing file and round-trips through the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'starling-lp-'))
    try {
      const file = join(dir, 'loaded_plugins')
      expect(readLoadedPlugins(file)).toBeUndefined()
      writeLoadedPlugins(file, [{ name: 'svc_a', loaded: true }])
      expect(readFileSync(file, 'utf8')).toBe('{svc_a, true}.\n')
      expect(readLoadedPlugins(file)).toEqual([{ name: 'svc_a', loaded: true }])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
