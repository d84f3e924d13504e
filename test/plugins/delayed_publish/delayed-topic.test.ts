import { MAX_DELAY_SECONDS, parseDelayedTopic } from '../../../plugins/delayed_publish/delayed-publisher.js'

const NOW = 1_700_000_000_500

describe('$delayed/<seconds>/<topic>', () => {
  it('is not a delayed publish without the $delayed/ prefix', () => {
    expect(parseDelayedTopic('t/delayed/1/x', NOW)).toBeNull()
    expect(parseDelayedTopic('$delayedx/1/t', NOW)).toBeNull()
  })

  it.each([
    ['$delayed/1/t', 't', NOW + 1000],
    ['$delayed/0/a/b/c', 'a/b/c', NOW],
    ['$delayed/60/sensors/1/temp', 'sensors/1/temp', NOW + 60_000],
    ['$delayed/15//leading/slash', '/leading/slash', NOW + 15_000],
    [`$delayed/${MAX_DELAY_SECONDS - 1}/t`, 't', NOW + (MAX_DELAY_SECONDS - 1) * 1000]
  ])('reads %s as topic %j at the right time', (topic, target, publishAt) => {
    expect(parseDelayedTopic(topic, NOW)).toEqual({ topic: target, publishAt })
  })

  it('reads a number from 4294967 on as a Unix time in seconds (EMQ X 4)', () => {
    const at = Math.round(NOW / 1000) + 30
    expect(parseDelayedTopic(`$delayed/${at}/t`, NOW)).toEqual({ topic: 't', publishAt: at * 1000 })
  })

  it.each([
    ['$delayed/abc/t', 'is not a whole number of seconds'],
    ['$delayed/-1/t', 'is not a whole number of seconds'],
    ['$delayed/1.5/t', 'is not a whole number of seconds'],
    ['$delayed//t', 'is not a whole number of seconds'],
    ['$delayed/10', 'no topic after the delay'],
    ['$delayed/10/', 'no topic after the delay'],
    ['$delayed/10/$SYS/brokers', '$SYS topics are published by the broker only'],
    [`$delayed/${Math.round(NOW / 1000) + MAX_DELAY_SECONDS + 1}/t`, 'seconds ahead']
  ])('refuses %s', (topic, why) => {
    const parsed = parseDelayedTopic(topic, NOW)
    expect(parsed).not.toBeNull()
    expect((parsed as { error: string }).error).toContain(why)
  })
})
