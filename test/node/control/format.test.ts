import { formatFields, formatJson, formatTable, formatTerm } from '../../../node/control/format.js'
import { listenersCommand, statusCommand } from '../../../node/control/commands.js'

describe('ctl output formatting', () => {
  it('prints rows as a plain bordered table with the columns in order', () => {
    const text = formatTable(
      [{ name: 'svc_web_hook', version: 'v0.1.0', active: true }, { name: 'svc_retainer', version: 'v0.1.0', active: false }],
      [{ key: 'name' }, { key: 'version', header: 'Version' }, { key: 'active', format: (v) => (v ? 'yes' : 'no') }]
    )
    expect(text).toBe([
      '┌──────────────┬─────────┬────────┐',
      '│ name         │ Version │ active │',
      '├──────────────┼─────────┼────────┤',
      '│ svc_web_hook │ v0.1.0  │ yes    │',
      '│ svc_retainer │ v0.1.0  │ no     │',
      '└──────────────┴─────────┴────────┘',
      ''
    ].join('\n'))
  })

  it('prints a message instead of an empty table', () => {
    expect(formatTable([], [{ key: 'name' }])).toBe('No entries\n')
    expect(formatTable([], [{ key: 'name' }], { empty: 'No rules' })).toBe('No rules\n')
  })

  it('prints EMQ X style key : value lines', () => {
    expect(formatFields([['acceptors', 8], ['shutdown_count', []]])).toBe(
      '  acceptors       : 8\n  shutdown_count  : []\n')
    expect(formatFields([['a', 'b']], { indent: 0, keyWidth: 3 })).toBe('a  : b\n')
  })

  it('renders values as Erlang terms the way EMQ X printed them', () => {
    expect(formatTerm([])).toBe('[]')
    expect(formatTerm({ closed: 2, kicked: 1 })).toBe('[{closed,2},{kicked,1}]')
    expect(formatTerm([1, 'a', null])).toBe('[1,a,undefined]')
  })

  it('renders JSON with a final newline', () => {
    expect(formatJson({ a: 1 })).toBe('{\n  "a": 1\n}\n')
    expect(formatJson(undefined)).toBe('null\n')
  })

  it('renders status as EMQ X did', () => {
    const inv = { args: [], options: {} }
    expect(statusCommand.render({ node: 'starling@127.0.0.1', status: 'started', version: 'v0.1.0', uptime: 5 }, inv))
      .toBe("Node 'starling@127.0.0.1' is started\nstarling 0.1.0 is running\n")
    expect(statusCommand.render({ node: 'starling@127.0.0.1', status: 'stopping', version: '0.1.0', uptime: 5 }, inv))
      .toBe("Node 'starling@127.0.0.1' is stopping\nstarling is not running\n")
  })

  it('renders listeners as EMQ X did, shutdown counts as a proplist', () => {
    const text = listenersCommand.render([
      { protocol: 'mqtt:ssl', listen_on: 8883, acceptors: 16, max_conns: 102400, current_conns: 0, shutdown_count: [] },
      { protocol: 'mqtt:tcp', listen_on: '0.0.0.0:1883', acceptors: 8, max_conns: 1024000, current_conns: 3, shutdown_count: { closed: 2, kicked: 1 } }
    ], { args: [], options: {} })
    expect(text).toBe([
      'listener on mqtt:ssl:8883',
      '  acceptors       : 16',
      '  max_conns       : 102400',
      '  current_conn    : 0',
      '  shutdown_count  : []',
      'listener on mqtt:tcp:0.0.0.0:1883',
      '  acceptors       : 8',
      '  max_conns       : 1024000',
      '  current_conn    : 3',
      '  shutdown_count  : [{closed,2},{kicked,1}]',
      ''
    ].join('\n'))
  })
})
