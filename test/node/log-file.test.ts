/**
 * The log file's rotation (node/log-file.ts): EMQ X 4's numbering, the count kept, the size
 * never passed, and nothing lost or reordered across a rotation.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openLogFile, type LogFile } from '../../node/log-file.js'

let dir: string
beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'starling-log-')) })
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const line = (i: number): string => `${JSON.stringify({ i, pad: 'x'.repeat(80) })}\n`
const flushed = async (file: LogFile): Promise<void> => await new Promise<void>(resolve => file.flush(() => resolve()))
const ended = async (file: LogFile): Promise<void> => await new Promise<void>(resolve => file.end(resolve))

it('rotates starling.log to .1, .1 to .2 ..., keeping count files in all and every line in order', async () => {
  const file = openLogFile({ dir, file: 'starling.log', rotationSize: 1024, rotationCount: 4 })
  // one synchronous burst: several rotations before any write reaches the disk
  for (let i = 0; i < 100; i++) file.write(line(i))
  await flushed(file)
  await ended(file)
  expect(readdirSync(dir).sort()).toEqual(['starling.log', 'starling.log.1', 'starling.log.2', 'starling.log.3'])
  const names = ['starling.log.3', 'starling.log.2', 'starling.log.1', 'starling.log']
  for (const name of names) expect(statSync(join(dir, name)).size).toBeLessThanOrEqual(1024)
  const kept = names.map(n => readFileSync(join(dir, n), 'utf8')).join('')
  const all = Array.from({ length: 100 }, (_, i) => line(i)).join('')
  // the newest lines, in order, none missing between the first kept and the last
  expect(all.endsWith(kept)).toBe(true)
  expect(kept.split('\n').length).toBeGreaterThan(30)
})

it('starts the file afresh with log.rotation.count = 1', async () => {
  const file = openLogFile({ dir, file: 'starling.log', rotationSize: 1024, rotationCount: 1 })
  for (let i = 0; i < 30; i++) file.write(line(i))
  await ended(file)
  expect(readdirSync(dir)).toEqual(['starling.log'])
  const text = readFileSync(join(dir, 'starling.log'), 'utf8')
  expect(text.length).toBeLessThanOrEqual(1024)
  expect(text.endsWith(line(29))).toBe(true)
})

it('flush calls back once the queued lines are in the file', async () => {
  const file = openLogFile({ dir, file: 'a.log', rotationSize: 1024 * 1024, rotationCount: 2 })
  for (let i = 0; i < 50; i++) file.write(line(i))
  await flushed(file)
  expect(readFileSync(join(dir, 'a.log'), 'utf8')).toBe(Array.from({ length: 50 }, (_, i) => line(i)).join(''))
  await ended(file)
})
