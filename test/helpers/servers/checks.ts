/**
 * Checks the harness's own tests make of every server (jest's `expect`): an outage leaves none
 * of its processes, a restart comes back on the same port, and `close()` leaves no process and
 * no directory.
 */
import { existsSync } from 'node:fs'
import type { ServerProcess } from './core.js'
import { descendants, pidAlive } from './system.js'

/** The server's PID and those it forked, which must all be gone after a stop. */
export function processesOf (server: ServerProcess): number[] {
  const pid = server.pid
  if (pid === undefined) throw new Error(`${server.name} is not running`)
  return [pid, ...descendants(pid)]
}

/** Stops (or kills) the server, checks nothing of it runs, and restarts it on the same port. */
export async function downAndBack (server: ServerProcess, how: 'stop' | 'kill'): Promise<void> {
  const port = server.port
  const before = processesOf(server)
  await server[how]()
  expect(server.pid).toBeUndefined()
  expect(before.filter(pidAlive)).toEqual([])
  await server.restart()
  expect(server.port).toBe(port)
  expect(server.pid).not.toBe(before[0])
}

/**
 * Closes the server and checks that none of `also` (PIDs of helpers it started, such as
 * RabbitMQ's epmd) nor its own processes run, and that its directory is gone.
 */
export async function closeAndCheck (server: ServerProcess, also: readonly number[] = []): Promise<void> {
  const before = [...processesOf(server), ...also]
  await server.close()
  expect(before.filter(pidAlive)).toEqual([])
  expect(existsSync(server.dir)).toBe(false)
}
