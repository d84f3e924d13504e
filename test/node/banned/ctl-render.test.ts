import { bannedListCommand } from '../../../node/banned/ctl.js'

describe('banned list rendering', () => {
  it('prints a table of the entries with until in seconds and as a UTC time', () => {
    const text = bannedListCommand.render([
      { who: 'evil-client', as: 'client_id', reason: 'flooding', desc: '', by: 'starling-ctl', until: 1700003600 },
      { who: '198.51.100.7', as: 'ip_address', reason: '', desc: '', by: 'admin', until: 1700000300 }
    ], { args: [], options: {} })
    expect(text.split('\n')[3]).toBe('│ client_id  │ evil-client  │ flooding │      │ starling-ctl │ 1700003600 (2023-11-14T23:13:20.000Z) │')
    expect(bannedListCommand.render([], { args: [], options: {} })).toBe('No banned entries\n')
  })
})
