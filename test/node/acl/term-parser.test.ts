/**
 * How deep acl.conf's terms may nest (node/acl/term-parser.ts MAX_TERM_DEPTH): a term nested
 * deeper is an AclFileError naming the file, the line and the limit, never a stack overflow
 * (which stopped the node at start-up without saying where).
 */
import { AclFileError, parseAclText, parseTerms } from '../../../node/acl/index.js'
import { MAX_TERM_DEPTH } from '../../../node/acl/term-parser.js'

function errorOf (run: () => unknown): AclFileError {
  try {
    run()
  } catch (err) {
    expect(err).toBeInstanceOf(AclFileError)
    return err as AclFileError
  }
  throw new Error('no error raised')
}

describe('acl.conf term depth', () => {
  it('reads tuples and lists nested up to the limit', () => {
    const [term] = parseTerms('{'.repeat(MAX_TERM_DEPTH) + 'a' + '}'.repeat(MAX_TERM_DEPTH) + '.', 'acl.conf')
    expect(term.kind).toBe('tuple')
    expect(parseTerms('['.repeat(MAX_TERM_DEPTH) + ']'.repeat(MAX_TERM_DEPTH) + '.', 'acl.conf')).toHaveLength(1)
  })

  it('refuses a term nested one level more, naming the file, the line and the limit', () => {
    const text = '%% rules\n{allow, all}.\n' + '{'.repeat(MAX_TERM_DEPTH + 1) + 'a' + '}'.repeat(MAX_TERM_DEPTH + 1) + '.\n'
    expect(errorOf(() => parseTerms(text, 'etc/acl.conf')).message)
      .toBe('etc/acl.conf:3: tuples and lists nested more than 100 levels deep; the limit is 100')
  })

  it.each([
    ['tuples', '{'.repeat(100_000) + '}'.repeat(100_000)],
    ['lists', '['.repeat(100_000) + ']'.repeat(100_000)],
    ['an unclosed term', '{allow, {'.repeat(100_000)],
    ["'and' of 'and' ...", "{allow, {'and', [".repeat(50_000) + 'all' + ']}'.repeat(50_000) + ', pubsub, ["#"]}']
  ])('refuses %s nested 100,000 levels deep without a stack overflow', (_what, term) => {
    expect(errorOf(() => parseAclText(`${term}.\n`, 'acl.conf')).message).toMatch(/^acl\.conf:1: tuples and lists nested more than 100 levels deep/)
  })
})
