/**
 * The node side of the control channel: a Unix domain socket that `starling-ctl` talks to.
 * Subsystems register the commands they serve (`status`, `plugins list`, `cluster join` ...);
 * the server reads requests, runs the handler and writes one response per request.
 */
import net from 'node:net'
import path from 'node:path'
import { chmod, lstat, mkdir, unlink } from 'node:fs/promises'
import type { Logger } from '../logger.js'
import { ApiError, HTTP_STATUS, MissingParameterError, RefusedError, WrongTypeError, errorCode } from '../errors.js'
import {
  MAX_SOCKET_PATH_BYTES, createLineReader, encodeLine, normaliseCommand, parseRequest,
  RequestFormatError, type ControlOptions, type ControlResponse
} from './protocol.js'
import { ControlError, ControlSocketInUseError, ControlSocketPathTooLongError } from './errors.js'
import { argumentsError, commandName, type CtlCommand } from './commands.js'

/** What a handler receives: the positional arguments and options of the command. */
export interface ControlHandlerRequest {
  args: string[]
  options: ControlOptions
}

/**
 * Serves one command. Its return value (JSON-serialisable) is the command's result; a throw
 * becomes an error response with the error's message and its code: an ApiError's (a kind of
 * the catalogue, node/errors.ts), else a numeric `code` the error carries (see errorCode).
 */
export type ControlHandler = (req: ControlHandlerRequest) => Promise<unknown> | unknown

/** Handlers by command name: space-joined words such as `status` or `cluster join`. */
export type ControlHandlers = Record<string, ControlHandler>

/** Options of {@link createControlServer}. */
export interface ControlServerInit {
  /** Where to listen, normally `controlSocketPath(resolvePath(cfg, 'node.data_dir'))`. */
  socketPath: string
  logger: Logger
  /** Commands known from the start; more can be added with `register`. */
  handlers?: ControlHandlers
  /**
   * The `starling-ctl` command table (bin/assemble.ts `ALL_CTL_COMMANDS`). A request for a
   * command of the table has its arguments checked against the command's declared ones
   * before its handler runs: too few, too many or not strings get the usage error
   * `starling-ctl` would print, and the handler is not called. A command the table does not
   * describe is passed its arguments as sent.
   */
  table?: ReadonlyArray<CtlCommand<any>>
}

/** The control socket of one node. */
export interface ControlServer {
  readonly socketPath: string
  /**
   * Listens on the socket (mode 0600, parent directory created if missing). A socket file
   * left by a node that died is replaced; if a live node answers on it, rejects with
   * {@link ControlSocketInUseError} and leaves that node's socket alone.
   */
  start(): Promise<void>
  /** Stops listening, drops open connections and removes the socket file. Idempotent. */
  stop(): Promise<void>
  /**
   * Adds a command. Throws if the name is already taken: unregister the old one first.
   * `secretArgs`: positions of arguments (passwords) never written to the log.
   */
  register(command: string, handler: ControlHandler, options?: { secretArgs?: readonly number[] }): void
  /** Removes a command (a plugin being unloaded). Returns whether it was registered. */
  unregister(command: string): boolean
  /** Names of the registered commands, sorted. */
  commands(): string[]
}

/** The catalogue's kind of each usage error (node/errors.ts): codes 107, 102 and 108. */
const USAGE_ERRORS = { missing: MissingParameterError, excess: RefusedError, type: WrongTypeError } as const

/** How long the start-up probe waits for a node that may already hold the socket. */
const PROBE_TIMEOUT_MS = 1000

/** Creates the control server of a node. Nothing listens until `start()`. */
export function createControlServer (init: ControlServerInit): ControlServer {
  const { socketPath } = init
  const logger = init.logger.child({ component: 'control' })
  const handlers = new Map<string, ControlHandler>()
  const secretArgs = new Map<string, readonly number[]>()
  // Invariant: `server` is set only while we own the socket file, so stop() never removes
  // a socket that belongs to another node.
  let server: net.Server | undefined
  const sockets = new Set<net.Socket>()
  const usages = new Map<string, CtlCommand<any>>()
  for (const spec of init.table ?? []) usages.set(normaliseCommand(commandName(spec)), spec)

  function register (command: string, handler: ControlHandler, options?: { secretArgs?: readonly number[] }): void {
    const name = normaliseCommand(command)
    if (name === '') throw new Error('A control command needs a name')
    if (handlers.has(name)) throw new Error(`Control command '${name}' is already registered`)
    handlers.set(name, handler)
    if (options?.secretArgs !== undefined) secretArgs.set(name, options.secretArgs)
    else secretArgs.delete(name)
  }
  for (const [command, handler] of Object.entries(init.handlers ?? {})) register(command, handler)

  function commands (): string[] {
    return [...handlers.keys()].sort()
  }

  function reply (socket: net.Socket, response: ControlResponse): void {
    if (!socket.writable) return
    let line: string
    try {
      line = encodeLine(response)
    } catch (err) {
      line = encodeLine({
        id: response.id,
        ok: false,
        error: { message: `The result cannot be sent as JSON: ${(err as Error).message}` }
      })
    }
    socket.write(line)
  }

  async function handleLine (socket: net.Socket, line: string): Promise<void> {
    let req
    try {
      req = parseRequest(line)
    } catch (err) {
      const id = err instanceof RequestFormatError ? err.requestId : null
      reply(socket, { id, ok: false, error: { message: `Bad request: ${(err as Error).message}` } })
      return
    }
    const handler = handlers.get(req.command)
    if (handler === undefined) {
      const known = commands().join(', ') || '(none)'
      reply(socket, { id: req.id, ok: false, error: { message: `Unknown command '${req.command}'; known commands: ${known}` } })
      return
    }
    const hidden = secretArgs.get(req.command)
    logger.debug({ command: req.command, args: hidden === undefined ? req.args : req.args.map((a, i) => hidden.includes(i) ? '******' : a) }, 'control command')
    try {
      // the client's argument count is not taken on trust: `starling-ctl` checks it, `nc -U` does not
      const spec = usages.get(req.command)
      const misuse = spec === undefined ? null : argumentsError(spec, req.args)
      if (misuse !== null) throw new USAGE_ERRORS[misuse.kind](misuse.message)
      const result = await handler({ args: req.args, options: req.options })
      reply(socket, { id: req.id, ok: true, result: result ?? null })
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err)
      const code = errorCode(err)
      // a user's mistake (unknown client, bad argument: a spec code below 500) is one line,
      // no stack; anything else is the node's failure and keeps its stack for the operator
      const refused = err instanceof ApiError ? err.status < 500 : code !== undefined && (HTTP_STATUS[code] ?? 500) < 500
      if (refused) logger.warn({ command: req.command, code, reason: message }, 'control command refused')
      else logger.warn({ command: req.command, err }, 'control command failed')
      reply(socket, { id: req.id, ok: false, error: code === undefined ? { message } : { message, code } })
    }
  }

  function onConnection (socket: net.Socket): void {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', (err) => logger.debug({ err }, 'control connection error'))
    // A client that half-closes after its requests (`nc -U` at the end of its input) still
    // gets every answer: the connection ends once the last request in flight is answered
    // (the server is half-open; before, the answers of slower commands were lost).
    let inFlight = 0
    let ended = false
    const endIfDone = (): void => { if (ended && inFlight === 0) socket.end() }
    socket.on('end', () => { ended = true; endIfDone() })
    socket.on('data', createLineReader(
      (line) => {
        inFlight++
        void handleLine(socket, line).finally(() => { inFlight--; endIfDone() })
      },
      () => {
        reply(socket, { id: null, ok: false, error: { message: 'Bad request: line too long' } })
        socket.end()
      }
    ))
  }

  async function start (): Promise<void> {
    if (server !== undefined) return
    if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
      throw new ControlSocketPathTooLongError(socketPath, MAX_SOCKET_PATH_BYTES)
    }
    await mkdir(path.dirname(socketPath), { recursive: true })
    await removeStaleSocket(socketPath)
    const candidate = net.createServer({ allowHalfOpen: true }, onConnection)
    await new Promise<void>((resolve, reject) => {
      candidate.once('error', (err: NodeJS.ErrnoException) => {
        // Another node won the race between our probe and our bind.
        reject(err.code === 'EADDRINUSE' ? new ControlSocketInUseError(socketPath) : err)
      })
      candidate.listen(socketPath, () => resolve())
    })
    server = candidate
    candidate.on('error', (err) => logger.error({ err }, 'control socket error'))
    // Only the node's own user may send it commands.
    await chmod(socketPath, 0o600)
    logger.info({ socket: socketPath }, 'control socket listening')
  }

  async function stop (): Promise<void> {
    const current = server
    if (current === undefined) return
    server = undefined
    for (const socket of sockets) socket.destroy()
    await new Promise<void>((resolve) => current.close(() => resolve()))
    // libuv unlinks the socket on close; this covers platforms where it does not.
    await unlink(socketPath).catch(() => undefined)
    logger.info({ socket: socketPath }, 'control socket closed')
  }

  return {
    socketPath,
    start,
    stop,
    register,
    unregister: (command) => handlers.delete(normaliseCommand(command)),
    commands
  }
}

/**
 * Removes a socket file nobody listens on (left by a node that was killed). Throws if a
 * live node answers, or if the path holds something that is not a socket.
 */
async function removeStaleSocket (socketPath: string): Promise<void> {
  let stats
  try {
    stats = await lstat(socketPath)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
    throw err
  }
  if (!stats.isSocket()) {
    throw new ControlError(`${socketPath} exists and is not a socket; remove it or change node.data_dir`)
  }
  if (await isAnswering(socketPath)) throw new ControlSocketInUseError(socketPath)
  await unlink(socketPath).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err
  })
}

/**
 * Whether something accepts connections on the socket. Rejects with the system error when
 * the answer cannot be known (no permission on the socket, for one).
 */
function isAnswering (socketPath: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = net.createConnection(socketPath)
    const done = (answering: boolean | Error): void => {
      clearTimeout(timer)
      probe.destroy()
      if (answering instanceof Error) reject(answering)
      else resolve(answering)
    }
    // A connect that neither succeeds nor fails in time means a process holds the socket.
    const timer = setTimeout(() => done(true), PROBE_TIMEOUT_MS)
    probe.once('connect', () => done(true))
    probe.once('error', (err: NodeJS.ErrnoException) => {
      done(err.code === 'ECONNREFUSED' || err.code === 'ENOENT' ? false : err)
    })
  })
}
