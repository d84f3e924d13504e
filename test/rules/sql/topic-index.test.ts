/** The index of FROM topic filters the runtime looks rules up in: it must agree with topicMatch. */
import { TopicIndex, topicMatch } from '../../../rules/sql/index.js'

const TOPICS = ['', 't', 't/', '/t', 't/a', 't/a/b', 't//b', 'a/b/c', '$SYS', '$SYS/x', '$share/g/t', 'sport/tennis/player1', '/', 'other/7/x']
const FILTERS = [
  '#', '+', '+/+', '/+', '+/#', 't', 't/', 't/#', 't/+', 't/+/b', 't/+/+', 't//b', 't/a/#', '+/a/#', 'a/+/c',
  '$SYS/#', '$SYS/+', '+/x', 'sport/+/player1', 'sport/#', '/', '/#', 'other/7/#'
]

/** Every filter of FILTERS in one index, each standing for itself. */
function indexOfAll (): TopicIndex<string> {
  const index = new TopicIndex<string>()
  for (const filter of FILTERS) index.add(filter, filter)
  return index
}

describe('TopicIndex', () => {
  const index = indexOfAll()

  for (const topic of TOPICS) {
    it(`finds exactly the filters topicMatch matches on ${JSON.stringify(topic)}`, () => {
      const found = index.match(topic, []).flat().sort()
      expect(found).toEqual(FILTERS.filter(f => topicMatch(topic, f)).sort())
    })
  }

  it('keeps the values of one filter together, in the order they were added', () => {
    const rules = new TopicIndex<number>()
    rules.add('t/#', 1)
    rules.add('t/+', 2)
    rules.add('t/#', 3)
    expect(rules.match('t/1', []).sort((a, b) => a.length - b.length)).toEqual([[2], [1, 3]])
    expect(rules.match('x/1', [])).toEqual([])
  })

  it('is empty until a filter is added', () => {
    const rules = new TopicIndex<number>()
    expect(rules.empty).toBe(true)
    rules.add('a', 1)
    expect(rules.empty).toBe(false)
  })
})
