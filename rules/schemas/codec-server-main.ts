/**
 * `starling-codec [--http [<host>:]<port>] [--tcp [<host>:]<port>]`: runs the reference
 * codec service (codec-server.ts) in the foreground until SIGTERM or SIGINT. With neither
 * option it serves HTTP on 127.0.0.1:9003 and TCP on 127.0.0.1:9004; port 0 picks a free
 * port. It prints one line per listener with the address to give as `parser_addr`.
 *
 * Invariant: this file, codec-server.ts and codec-wire.ts import only Node's own modules,
 * so they run as they are after a plain transpile (the tests run them as a child process).
 */
import { startCodecServer, type CodecServerInit } from './codec-server.js'

/** `9003`, `0.0.0.0:9003` or `[::1]:9003` as a host and port. */
function address (text: string, option: string): { host: string, port: number } {
  const m = /^(?:(?:\[([^\]]+)\]|([^:]+)):)?(\d{1,5})$/.exec(text)
  if (m === null || Number(m[3]) > 65535) throw new Error(`${option} takes [<host>:]<port>, got ${JSON.stringify(text)}`)
  return { host: m[1] ?? m[2] ?? '127.0.0.1', port: Number(m[3]) }
}

/** Parses the arguments (the words after the program name). */
export function parseCodecArgs (argv: string[]): CodecServerInit {
  const init: CodecServerInit = {}
  for (let i = 0; i < argv.length; i++) {
    const option = argv[i]
    if (option === '-h' || option === '--help') throw new Error('usage: starling-codec [--http [<host>:]<port>] [--tcp [<host>:]<port>]')
    if (option !== '--http' && option !== '--tcp') throw new Error(`unknown option ${option}; usage: starling-codec [--http [<host>:]<port>] [--tcp [<host>:]<port>]`)
    const value = argv[++i]
    if (value === undefined) throw new Error(`${option} needs [<host>:]<port>`)
    init[option === '--http' ? 'http' : 'tcp'] = address(value, option)
  }
  if (init.http === undefined && init.tcp === undefined) return { http: { host: '127.0.0.1', port: 9003 }, tcp: { host: '127.0.0.1', port: 9004 } }
  return init
}

/** Runs the service; resolves once it listens (the process then runs until a signal). */
export async function main (argv: string[]): Promise<void> {
  let init: CodecServerInit
  try {
    init = parseCodecArgs(argv)
  } catch (err) {
    process.stderr.write(`starling-codec: ${(err as Error).message}\n`)
    process.exit(1)
  }
  const server = await startCodecServer(init)
  if (server.httpUrl !== undefined) process.stdout.write(`starling-codec: HTTP codec service at ${server.httpUrl}\n`)
  if (server.tcpAddress !== undefined) process.stdout.write(`starling-codec: TCP codec service at ${server.tcpAddress}\n`)
  const stop = (): void => { void server.close().then(() => process.exit(0)) }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

