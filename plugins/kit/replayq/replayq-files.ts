/**
 * The replay queue's files (docs/replayq.md): segment files `<seqno>.seg` of records
 * (replayq-format.ts) and the COMMIT file. The queue (replayq.ts) decides what to write and
 * what is finished; this module writes, reads back and deletes.
 *
 * Invariants:
 * - One group is written at a time (the queue's writer loop), so a group's records follow
 *   the previous group's in the files, and `bytes` / `endSeq` of a segment only cover data
 *   whose write completed: a reader never sees a record that is still being written.
 * - A group is durable when `writeGroup` resolves: every segment it touched is fsynced, and
 *   the directory too when a segment file was created.
 * - A failed group leaves no bytes behind: each touched file is truncated back to its length
 *   before the group and files the group created are removed. If the truncate fails, the
 *   next group overwrites the same offsets, and a crash before that leaves a torn tail.
 * - Segments are written in ascending `seqno`; after an open, writing starts a new segment,
 *   so nothing is ever appended after a torn or corrupt region.
 * - A segment is deleted only when it is sealed (a later one is being written) or the queue
 *   is closing, and every item in it is finished.
 * - The directory is 0700 and every file in it 0600 once `open` resolves, wherever the
 *   directory is (a bridge's `queue.replayq_dir` may be outside node.data_dir): the buffer
 *   holds the messages in clear.
 */
import { closeSync, openSync, readSync } from 'node:fs'
import { chmod, mkdir, open, readdir, readFile, rename, unlink, truncate, type FileHandle } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { DoneSet } from './replayq-done.js'
import { parseRecord, scanSegment, type StoredRecord } from './replayq-format.js'

/** The two calls on the write path, replaceable to count fsyncs or simulate a full disk (tests). */
export interface ReplayQueueIo {
  /** Writes `buffers` at `position` of a segment; resolves with the number of bytes written. */
  writev: (file: FileHandle, buffers: Buffer[], position: number) => Promise<number>
  /** fsyncs a segment file. */
  sync: (file: FileHandle) => Promise<void>
}

export const DEFAULT_IO: ReplayQueueIo = {
  writev: async (file, buffers, position) => (await file.writev(buffers, position)).bytesWritten,
  sync: async (file) => { await file.sync() }
}

/** The logger calls the queue makes (a pino logger fits). */
export interface ReplayQueueLogger {
  info: (obj: object, msg: string) => void
  warn: (obj: object, msg: string) => void
  error: (obj: object, msg: string) => void
}

/** A segment file and the items it holds. */
export interface Segment {
  segno: number
  path: string
  /** Sequence number of its first record, and one past its last (whole records written). */
  firstSeq: number
  endSeq: number
  /** Bytes of whole records in the file (written, or valid when read at open). */
  bytes: number
  /** Open while it is the segment being written. */
  handle: FileHandle | null
}

/** What the files held at open. */
export interface OpenedFiles {
  done: DoneSet
  /** One past the highest sequence number seen (records and COMMIT). */
  nextSeq: number
  /** Not finished items on disk and their payload bytes. */
  count: number
  bytes: number
  /** Invalid records found in the middle of a segment (the rest of each was skipped). */
  corrupt: number
}

const SEGMENT_NAME = /^(\d{16})\.seg$/
const COMMIT_FILE = 'COMMIT'
/** The queue's directory and files are the node's user's only, wherever they are (as node.data_dir). */
const DIR_MODE = 0o700
const FILE_MODE = 0o600
const READ_CHUNK = 1024 * 1024

/** The segment files of one queue directory. See the invariants above. */
export class SegmentFiles {
  /** Ascending `segno`; the last is being written unless `sealedTail`. */
  readonly segments: Segment[] = []
  /** One past the last sequence number whose write completed (or failed). */
  writtenEnd = 0
  /** fsyncs of segment files and bytes of records written, since open. */
  syncs = 0
  writtenBytes = 0
  private sealedTail = true
  private nextSegno = 0
  private cursor: { segno: number, offset: number, seq: number } | null = null

  constructor (readonly dir: string, private readonly segBytes: number, private readonly io: ReplayQueueIo, private readonly log: ReplayQueueLogger) {}

  /** Reads the directory back: the COMMIT file, then every segment (torn tails truncated). */
  async open (): Promise<OpenedFiles> {
    await this.makePrivate()
    const done = await this.readCommit()
    const names = (await readdir(this.dir)).filter((n) => SEGMENT_NAME.test(n)).sort()
    // sequence numbers strictly increase across segments; past every COMMIT range too
    let nextRecordSeq = 0
    let count = 0
    let bytes = 0
    let corrupt = 0
    for (let i = 0; i < names.length; i++) {
      const segno = Number(SEGMENT_NAME.exec(names[i]!)![1])
      const path = join(this.dir, names[i]!)
      const buf = await readFile(path)
      let firstSeq = -1
      let lastSeq = -1
      const { validBytes, end } = scanSegment(buf, i === names.length - 1, nextRecordSeq, (record) => {
        if (firstSeq < 0) firstSeq = record.seq
        lastSeq = record.seq
        if (!done.has(record.seq)) {
          count++
          bytes += record.payload.length
        }
      })
      if (end.kind === 'torn') {
        this.log.warn({ segment: path, offset: end.offset, bytes: buf.length - end.offset }, 'replay queue: truncating an unfinished write at the end of a segment')
        await truncate(path, end.offset)
      } else if (end.kind === 'corrupt') {
        corrupt++
        this.log.error({ segment: path, offset: end.offset, reason: end.reason, skipped: buf.length - end.offset }, 'replay queue: corrupt record in a segment; the rest of the segment is skipped')
      }
      this.nextSegno = segno + 1
      if (firstSeq >= 0) nextRecordSeq = lastSeq + 1
      if (firstSeq < 0 || done.covers(firstSeq, lastSeq + 1)) {
        await unlink(path)
        continue
      }
      this.segments.push({ segno, path, firstSeq, endSeq: lastSeq + 1, bytes: validBytes, handle: null })
    }
    const nextSeq = Math.max(nextRecordSeq, done.highWater())
    this.writtenEnd = nextSeq
    return { done, nextSeq, count, bytes, corrupt }
  }

  /**
   * Writes `records` (sequence numbers `firstSeq` on, consecutive) after the data already
   * written, starting a new segment whenever the current one would exceed `segBytes`, and
   * fsyncs them. Resolves once durable; on failure nothing of the group is left.
   */
  async writeGroup (records: Buffer[], firstSeq: number): Promise<void> {
    interface Part { seg: Segment, position: number, buffers: Buffer[], bytes: number, created: boolean }
    const parts: Part[] = []
    let part: Part | undefined
    let tail = this.sealedTail ? undefined : this.segments[this.segments.length - 1]
    let segno = this.nextSegno
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!
      const filled = part !== undefined ? part.position + part.bytes : tail?.bytes ?? 0
      if (part === undefined || tail === undefined || (filled > 0 && filled + record.length > this.segBytes)) {
        if (tail === undefined || (filled > 0 && filled + record.length > this.segBytes)) {
          tail = { segno, path: join(this.dir, `${String(segno).padStart(16, '0')}.seg`), firstSeq: firstSeq + i, endSeq: firstSeq + i, bytes: 0, handle: null }
          segno++
        }
        part = { seg: tail, position: tail.bytes, buffers: [], bytes: 0, created: tail.handle === null && tail.bytes === 0 }
        parts.push(part)
      }
      part.buffers.push(record)
      part.bytes += record.length
    }
    try {
      // in order of seqno, so a later segment never holds data while an earlier one is short
      for (const p of parts) {
        if (p.seg.handle === null) p.seg.handle = await open(p.seg.path, p.created ? 'w' : 'r+', FILE_MODE)
        const written = await this.io.writev(p.seg.handle, p.buffers, p.position)
        if (written !== p.bytes) throw Object.assign(new Error(`short write to ${p.seg.path}: ${written} of ${p.bytes} bytes`), { code: 'ENOSPC' })
      }
      await Promise.all(parts.map(async (p) => { await this.io.sync(p.seg.handle!) }))
      this.syncs += parts.length
      if (parts.some((p) => p.created)) await this.syncDir()
    } catch (err) {
      await this.undo(parts)
      throw err
    }
    let seq = firstSeq
    for (const p of parts) {
      if (p.created) this.segments.push(p.seg)
      p.seg.bytes += p.bytes
      seq += p.buffers.length
      p.seg.endSeq = seq
      this.writtenBytes += p.bytes
    }
    this.nextSegno = segno
    this.sealedTail = false
    this.writtenEnd = firstSeq + records.length
    // every segment before the one written last is sealed: close their files
    const sealed: FileHandle[] = []
    for (let i = 0; i < this.segments.length - 1; i++) {
      const seg = this.segments[i]!
      if (seg.handle !== null) sealed.push(seg.handle)
      seg.handle = null
    }
    await Promise.all(sealed.map(async (handle) => { await handle.close() }))
  }

  /** After a failed group: the sequence numbers it had are skipped (the queue marks them finished). */
  skipFailed (endSeq: number): void {
    this.writtenEnd = Math.max(this.writtenEnd, endSeq)
  }

  /**
   * Reads back, synchronously, whole records with a sequence number at or above `fromSeq`,
   * in order, until `maxBytes` of payload (at least one record) or the end of what is written.
   * A record found invalid now is logged and the rest of its segment skipped.
   */
  readRecords (fromSeq: number, maxBytes: number, onCorrupt: () => void): StoredRecord[] {
    const out: StoredRecord[] = []
    let payloadBytes = 0
    for (const seg of this.segments) {
      if (seg.endSeq <= fromSeq) continue
      const c = this.cursor
      let offset = c !== null && c.segno === seg.segno && c.seq <= fromSeq ? c.offset : 0
      const fd = openSync(seg.path, 'r')
      try {
        while (offset < seg.bytes && payloadBytes < maxBytes) {
          const chunk = Buffer.allocUnsafe(Math.min(seg.bytes - offset, Math.max(READ_CHUNK, maxBytes - payloadBytes)))
          const got = readSync(fd, chunk, 0, chunk.length, offset)
          let at = 0
          while (at < got && payloadBytes < maxBytes) {
            const parsed = parseRecord(chunk.subarray(0, got), at)
            if (parsed.kind === 'incomplete' && at === 0 && parsed.need <= seg.bytes - offset) {
              // one record longer than the chunk: read it whole
              const whole = Buffer.allocUnsafe(parsed.need)
              readSync(fd, whole, 0, parsed.need, offset)
              const again = parseRecord(whole, 0)
              if (again.kind !== 'record') break
              if (again.record.seq >= fromSeq) { out.push(again.record); payloadBytes += again.record.payload.length }
              at = again.end
              break
            }
            if (parsed.kind === 'incomplete') break
            if (parsed.kind === 'invalid') {
              this.log.error({ segment: seg.path, offset: offset + at, reason: parsed.reason }, 'replay queue: corrupt record read back; the rest of the segment is skipped')
              onCorrupt()
              seg.bytes = offset + at
              break
            }
            if (parsed.record.seq >= fromSeq) {
              out.push(parsed.record)
              payloadBytes += parsed.record.payload.length
            }
            at = parsed.end
          }
          if (at === 0) break
          offset += at
        }
      } finally {
        closeSync(fd)
      }
      const last = out[out.length - 1]
      this.cursor = { segno: seg.segno, offset, seq: last === undefined ? fromSeq : last.seq + 1 }
      if (payloadBytes >= maxBytes) break
    }
    return out
  }

  /** Writes the COMMIT file atomically: a temporary file, fsynced, renamed over it. */
  async writeCommit (done: DoneSet): Promise<void> {
    const tmp = join(this.dir, `${COMMIT_FILE}.tmp`)
    const file = await open(tmp, 'w', FILE_MODE)
    try {
      await file.writeFile(JSON.stringify({ version: 1, ...done.snapshot() }))
      await file.sync()
    } finally {
      await file.close()
    }
    await rename(tmp, join(this.dir, COMMIT_FILE))
  }

  /**
   * Deletes the segments whose items are all finished: sealed ones, and the one being
   * written too when `closing`. Returns how many were deleted.
   */
  async deleteFinished (done: DoneSet, closing: boolean): Promise<number> {
    let deleted = 0
    for (let i = 0; i < this.segments.length; i++) {
      const seg = this.segments[i]!
      const isTail = i === this.segments.length - 1 && !this.sealedTail
      if ((isTail && !closing) || !done.covers(seg.firstSeq, seg.endSeq)) continue
      this.segments.splice(i--, 1)
      if (isTail) this.sealedTail = true
      if (seg.handle !== null) await seg.handle.close()
      seg.handle = null
      if (this.cursor?.segno === seg.segno) this.cursor = null
      await unlink(seg.path).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') this.log.error({ segment: seg.path, err }, 'replay queue: could not delete a finished segment')
      })
      deleted++
    }
    return deleted
  }

  /** Segment files and their bytes on disk. */
  usage (): { segments: number, bytes: number } {
    let bytes = 0
    for (const seg of this.segments) bytes += seg.bytes
    return { segments: this.segments.length, bytes }
  }

  /** Closes the file being written (the queue closes). */
  async close (): Promise<void> {
    for (const seg of this.segments) {
      if (seg.handle !== null) await seg.handle.close()
      seg.handle = null
    }
    this.sealedTail = true
  }

  private async readCommit (): Promise<DoneSet> {
    await unlink(join(this.dir, `${COMMIT_FILE}.tmp`)).catch(() => {})
    let text: string
    try {
      text = await readFile(join(this.dir, COMMIT_FILE), 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new DoneSet()
      throw err
    }
    try {
      const parsed = JSON.parse(text) as { commit: number, done: Array<[number, number]> }
      if (!Number.isSafeInteger(parsed.commit) || !Array.isArray(parsed.done)) throw new Error('unexpected shape')
      return new DoneSet(parsed.commit, parsed.done)
    } catch (err) {
      // at-least-once: without a readable COMMIT every item on disk is delivered again
      this.log.error({ err, file: join(this.dir, COMMIT_FILE) }, 'replay queue: unreadable COMMIT file; every item on disk will be delivered again')
      return new DoneSet()
    }
  }

  private async undo (parts: Array<{ seg: Segment, position: number, created: boolean }>): Promise<void> {
    for (const p of parts) {
      const handle = p.seg.handle
      try {
        if (p.created) {
          p.seg.handle = null
          if (handle !== null) await handle.close()
          await unlink(p.seg.path).catch(() => {})
        } else if (handle !== null) {
          await handle.truncate(p.position)
        }
      } catch (err) {
        this.log.error({ segment: p.seg.path, err }, 'replay queue: could not undo a failed write; the next write overwrites it')
      }
    }
  }

  /**
   * Creates the directory (and missing parents) for the node's user only, and closes up what
   * an older version or another umask left readable: the directory 0700, its files 0600
   * (mkdir's and open's modes are masked by the umask, so the modes are set explicitly).
   */
  private async makePrivate (): Promise<void> {
    const first = await mkdir(this.dir, { recursive: true, mode: DIR_MODE })
    // the queue's directory, and up to the outermost one this call created (`first`)
    let d = this.dir
    await chmod(d, DIR_MODE)
    while (first !== undefined && d !== first && dirname(d) !== d) {
      d = dirname(d)
      await chmod(d, DIR_MODE)
    }
    for (const entry of await readdir(this.dir, { withFileTypes: true })) {
      if (entry.isFile()) await chmod(join(this.dir, entry.name), FILE_MODE)
    }
  }

  private async syncDir (): Promise<void> {
    const dir = await open(this.dir, 'r')
    try {
      await dir.sync()
    } finally {
      await dir.close()
    }
  }
}
