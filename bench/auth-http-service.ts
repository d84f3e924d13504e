/**
 * The HTTP auth service of bench/auth.ts, in the bench process (node:http on an ephemeral
 * loopback port): EMQ X 4.4's `auth_req` with the shipped defaults (POST, form parameters
 * `clientid`, `username`, `password`) checked against salted SHA-256 entries (salt first, as
 * `salt,sha256` in the SQL backends), and `acl_req` always allowing. `delayMs` holds every
 * `auth_req` answer back (the slow-backend part); `acl_req` is always answered at once.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

/** A stored entry: hex SHA-256 of salt ‖ password. */
interface Entry { salt: string, hash: Buffer }

export class HttpAuthService {
  /** Added before every `auth_req` answer (ms). */
  delayMs = 0
  /** `auth_req` requests answered. */
  answered = 0
  private readonly server: Server
  private readonly users = new Map<string, Entry>()
  private readonly sockets = new Set<Socket>()
  private port = 0

  constructor () {
    this.server = createServer((req, res) => { void this.handle(req, res) })
    this.server.keepAliveTimeout = 60_000
    this.server.on('connection', (s) => { this.sockets.add(s); s.on('close', () => this.sockets.delete(s)) })
  }

  /** Adds a user with a salted SHA-256 entry. */
  addUser (username: string, password: string, salt: string): void {
    this.users.set(username, { salt, hash: createHash('sha256').update(salt).update(password).digest() })
  }

  async start (): Promise<void> {
    this.server.listen(0, '127.0.0.1')
    await once(this.server, 'listening')
    this.port = (this.server.address() as AddressInfo).port
  }

  async stop (): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()))
    for (const s of this.sockets) s.destroy()
    await closed
  }

  url (path: string): string {
    return `http://127.0.0.1:${this.port}${path}`
  }

  private async handle (req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const path = (req.url ?? '/').split('?')[0]
    if (path === '/mqtt/acl') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
      return
    }
    if (path !== '/mqtt/auth') {
      res.writeHead(404).end()
      return
    }
    const params = new URLSearchParams(Buffer.concat(chunks).toString())
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs))
    if (res.destroyed) return
    const entry = this.users.get(params.get('username') ?? '')
    this.answered++
    if (entry === undefined) {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ignore')
      return
    }
    const given = createHash('sha256').update(entry.salt).update(params.get('password') ?? '').digest()
    const ok = timingSafeEqual(given, entry.hash)
    res.writeHead(ok ? 200 : 401, { 'content-type': 'text/plain' }).end(ok ? 'ok' : 'bad password')
  }
}
