/** The republish loop guard's marks: by payload identity, and by content for acked messages. */
import { MAX_CONTENT_MARKS, RepublishMarks } from '../../../rules/republish-marks.js'

describe('RepublishMarks', () => {
  it('finds the chain of a marked payload object, not of an equal one', () => {
    const marks = new RepublishMarks()
    const payload = Buffer.from('x')
    marks.mark('t', payload, ['rule:1'])
    expect(marks.chainOf(payload)).toEqual(['rule:1'])
    expect(marks.chainOf(Buffer.from('x'))).toBeUndefined()
  })

  it('recognises an acked copy by topic and payload only while acked rules exist', () => {
    const marks = new RepublishMarks()
    marks.mark('t', Buffer.from('a'), ['r1'])
    expect(marks.chainOfAcked('t', Buffer.from('a'))).toBeUndefined()
    marks.rememberContent = true
    marks.mark('t', Buffer.from('b'), ['r1', 'r2'])
    expect(marks.chainOfAcked('t', Buffer.from('b'))).toEqual(['r1', 'r2'])
    expect(marks.chainOfAcked('u', Buffer.from('b'))).toBeUndefined()
    marks.clear()
    expect(marks.chainOfAcked('t', Buffer.from('b'))).toBeUndefined()
  })

  it('keeps a bounded number of content marks', () => {
    const marks = new RepublishMarks()
    marks.rememberContent = true
    for (let i = 0; i <= MAX_CONTENT_MARKS; i++) marks.mark('t', Buffer.from(String(i)), ['r'])
    expect(marks.chainOfAcked('t', Buffer.from('0'))).toBeUndefined()
    expect(marks.chainOfAcked('t', Buffer.from(String(MAX_CONTENT_MARKS)))).toEqual(['r'])
  })
})
