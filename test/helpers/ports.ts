/**
 * Ports for the things a test starts (nodes, real servers) that must be named before they bind.
 *
 * A port taken from `listen(0)` and released is one the kernel hands out again: to the next
 * `listen(0)` of a node starting beside it, or of a test in the other jest worker. CI saw a
 * cluster node's port taken that way ("address already in use"). So these ports come from
 * below the kernel's ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`), where no
 * `listen(0)` and no outgoing connection lands. Each jest worker has its own slice of that
 * range, and within a worker no port is given twice until its slice wraps; a port something
 * else holds is skipped.
 */
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
// the kernel's pick (listen(0), released), for a machine whose ephemeral range leaves no room below it
import { freePort as kernelPort } from '../../bench/broker-process.js'

/** Worker slices; jest runs 2 workers here (jest.config.js), more would share a slice. */
const SLICES = 8
const FLOOR = 10000

function ephemeralLow (): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    return Number.isInteger(low) && low > 0 ? low : 0
  } catch {
    return 0
  }
}

const LOW_EPHEMERAL = ephemeralLow()
const SLICE = Math.floor((LOW_EPHEMERAL - FLOOR) / SLICES)
const worker = Number(process.env.JEST_WORKER_ID ?? '0') % SLICES
const sliceStart = FLOOR + worker * SLICE
let next = SLICE > 100 ? Math.floor(Math.random() * SLICE) : 0

/** Binds `port` on 127.0.0.1 and releases it: true when nothing held it. */
async function bindable (port: number): Promise<boolean> {
  return await new Promise(resolve => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)))
  })
}

/** A TCP port free on 127.0.0.1 that no `listen(0)` on this machine will be given. */
export async function freePort (): Promise<number> {
  if (SLICE <= 100) return await kernelPort()
  for (let tries = 0; tries < SLICE; tries++) {
    const port = sliceStart + (next++ % SLICE)
    if (await bindable(port)) return port
  }
  throw new Error(`no free port in ${sliceStart}-${sliceStart + SLICE - 1}`)
}
