/**
 * What the server harness needs of the operating system: finding a server's binaries (and
 * naming the Debian package when one is missing), the system user a database runs as when the
 * tests run as root, one-shot commands (initdb, mariadb-install-db, openssl), free ports, and
 * the processes a server forked (so that a stop leaves none behind). Linux only: the servers
 * come from Debian packages, and descendants are read from /proc.
 */
import { spawn } from 'node:child_process'
import { accessSync, constants, chownSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** Thrown when a server's program is not installed: the message names the Debian package. */
export class MissingServerError extends Error {
  override readonly name = 'MissingServerError'
  /** The Debian package that provides the missing program. */
  readonly debianPackage: string
  constructor (what: string, debianPackage: string) {
    super(`${what} is not installed: install the Debian package \`${debianPackage}\` ` +
      `(apt-get install ${debianPackage}; .ci/run does this on CI)`)
    this.debianPackage = debianPackage
  }
}

function isExecutable (path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/**
 * The first executable among `candidates` (absolute paths, or names looked up in `PATH` and
 * the sbin folders, which a non-root `PATH` often lacks). Throws {@link MissingServerError}
 * naming `debianPackage` when there is none.
 */
export function findBinary (candidates: readonly string[], debianPackage: string): string {
  const folders = [...(process.env.PATH ?? '').split(':').filter(Boolean), '/usr/sbin', '/usr/bin', '/sbin', '/bin']
  for (const candidate of candidates) {
    if (candidate.startsWith('/')) {
      if (isExecutable(candidate)) return candidate
      continue
    }
    for (const folder of folders) {
      const path = join(folder, candidate)
      if (isExecutable(path)) return path
    }
  }
  throw new MissingServerError(candidates.join(' or '), debianPackage)
}

/** A system account's ids (from /etc/passwd). */
export interface SystemUser { name: string, uid: number, gid: number }

/**
 * The account a server runs as: `name` when this process is root (PostgreSQL and MariaDB
 * refuse to run as root, and a test should not run a server with more rights than its
 * package gives it), none (this process's own user) otherwise. The account is created by the
 * server's Debian package.
 */
export function serverUser (name: string | undefined, debianPackage: string): SystemUser | undefined {
  if (name === undefined || process.getuid?.() !== 0) return undefined
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(name + ':'))
  if (line === undefined) throw new MissingServerError(`the system user \`${name}\``, debianPackage)
  const [, , uid, gid] = line.split(':')
  return { name, uid: Number(uid), gid: Number(gid) }
}

/** Gives `paths` to `user` (no-op without one), so a server running as that user can write them. */
export function giveTo (user: SystemUser | undefined, ...paths: string[]): void {
  if (user === undefined) return
  for (const path of paths) chownSync(path, user.uid, user.gid)
}

/** Options of {@link runCommand}. */
export interface RunCommandOptions {
  /** Run as this account (root only). */
  user?: SystemUser
  cwd?: string
  env?: NodeJS.ProcessEnv
  /** Written to the command's standard input. */
  input?: string
  /** Killed (SIGKILL) after this long. */
  timeoutMs?: number
}

/**
 * Runs a one-shot command to completion and resolves with its output; rejects with the exit
 * status and the whole output when it fails, so a failing initdb says why.
 */
export async function runCommand (argv: readonly string[], opts: RunCommandOptions = {}): Promise<string> {
  const [file, ...args] = argv
  const child = spawn(file, args, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    uid: opts.user?.uid,
    gid: opts.user?.gid,
    stdio: ['pipe', 'pipe', 'pipe']
  })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (s: string) => { output += s })
  child.stderr.setEncoding('utf8').on('data', (s: string) => { output += s })
  child.stdin.on('error', () => {}) // a command that exits without reading its input
  child.stdin.end(opts.input ?? '')
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000)
  try {
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
      child.once('error', reject)
      child.once('close', (c, s) => resolve([c, s]))
    })
    if (code !== 0) {
      throw new Error(`${argv.join(' ')} failed (${signal ?? `exit ${String(code)}`})${opts.user ? ` as ${opts.user.name}` : ''}:\n${output}`)
    }
    return output
  } finally {
    clearTimeout(timer)
  }
}

/** Ports below the kernel's ephemeral range, one slice per jest worker: see ../ports.ts. */
export { freePort } from '../ports.js'

/**
 * True while a process with this PID runs. A zombie does not count: an orphan is reaped by
 * PID 1, which in a container may never do it.
 */
export function pidAlive (pid: number): boolean {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return false
  }
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
}

/**
 * The PIDs of every process below `pid` (children, grandchildren ...), read from /proc.
 * PostgreSQL's backends put themselves in their own process groups, so a group kill would
 * miss them: the harness snapshots descendants before a stop and waits for them too.
 */
export function descendants (pid: number): number[] {
  const parentOf = new Map<number, number[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue // exited meanwhile
    }
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    const children = parentOf.get(ppid) ?? []
    children.push(Number(entry))
    parentOf.set(ppid, children)
  }
  const found: number[] = []
  const queue = [pid]
  while (queue.length > 0) {
    for (const child of parentOf.get(queue.shift() as number) ?? []) {
      found.push(child)
      queue.push(child)
    }
  }
  return found
}
