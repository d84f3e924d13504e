import { topicMatches } from '../../../node/mqtt/topic.js'
import { topicMatch } from '../../../rules/sql/index.js'

const TOPICS = ['', 't', 't/', '/t', 't/a', 't/a/b', 't//b', 'a/b/c', '$SYS', '$SYS/x', '$share/g/t', 'sport/tennis/player1', '/']
const FILTERS = [
  '#', '+', '+/+', '/+', '+/#', 't', 't/', 't/#', 't/+', 't/+/b', 't/+/+', 't//b', 't/a/#', '+/a/#', 'a/+/c',
  '$SYS/#', '$SYS/+', '+/x', 'sport/+/player1', 'sport/#', '/', '/#'
]

describe('topicMatch (=~ and FROM filters)', () => {
  for (const topic of TOPICS) {
    it(`agrees with node/mqtt/topic on ${JSON.stringify(topic)}`, () => {
      for (const filter of FILTERS) {
        expect([filter, topicMatch(topic, filter)]).toEqual([filter, topicMatches(filter, topic)])
      }
    })
  }
})
