/**
 * The brokers of the bridge bench, each a child process on loopback:
 * - the remote ("cloud") Mosquitto, which can be stopped and started again on the same port
 *   with its persistent sessions kept (persistence in its directory, saved at a clean stop);
 * - the local broker that bridges to it: Starling (`bin/starling`, svc_bridge_mqtt loaded
 *   through `<data_dir>/loaded_plugins`, the bridge's keys in `STARLING_BRIDGE__MQTT__CLOUD__*`
 *   variables) with a memory or a disk buffer, or Mosquitto with its own bridge
 *   (`connection` / `address` / `topic ... out 1` in its conf).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { envVarName } from '../node/config/environment.js'
import { findOnPath, freePort, mosquittoTarget, starlingTarget, type BrokerTarget } from './broker-process.js'

/** The topic filter every local broker forwards, and the remote subscriber subscribes to. */
export const FORWARDED = 'bench/#'
/** Name of the bridge (Starling: `bridge.mqtt.cloud.*`; Mosquitto: `connection cloud`). */
export const BRIDGE_NAME = 'cloud'
/** Seconds between a bridge's connection attempts, for both brokers (Mosquitto's `restart_timeout`). */
export const RECONNECT_S = 1

/** One way of bridging, a column of the report. */
export interface BridgeCase {
  /** Short name shown in the table. */
  name: string
  /** What it is, for the progress lines and the docs. */
  describe: string
  /** The local broker, bridging to the remote on `remotePort`. */
  target: (remotePort: number) => BrokerTarget
  /** Directory of the disk buffer inside the broker's data directory, or null. */
  bufferDir: ((dataDir: string) => string) | null
}

const liveChildren = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL')
})

/**
 * The cases: Starling memory buffer, Starling disk buffer, Mosquitto's own bridge. `starlingKeys`
 * are more keys of the Starling bridge (`max_inflight_batches` -> `256`), for tuning runs.
 */
export function bridgeCases (repoRoot: string, starlingKeys: Record<string, string> = {}): BridgeCase[] {
  const starling = (disk: boolean) => (remotePort: number): BrokerTarget => {
    const base = starlingTarget(repoRoot)
    return {
      name: disk ? 'starling-disk' : 'starling-mem',
      unavailable: base.unavailable,
      command: (port, dataDir) => {
        const cmd = base.command(port, dataDir)
        // svc_bridge_mqtt is not loaded by default: the node loads what this file lists
        writeFileSync(path.join(dataDir, 'loaded_plugins'), '{svc_bridge_mqtt, true}.\n')
        const key = (k: string): string => envVarName(`bridge.mqtt.${BRIDGE_NAME}.${k}`)
        const env: Record<string, string> = {
          ...cmd.env,
          [key('address')]: `127.0.0.1:${remotePort}`,
          [key('proto_ver')]: 'mqttv4',
          [key('client_id')]: `bench_${disk ? 'disk' : 'mem'}`,
          [key('forwards')]: FORWARDED,
          [key('reconnect_interval')]: `${RECONNECT_S}s`
        }
        if (disk) env[key('queue.replayq_dir')] = path.join(dataDir, 'replayq')
        for (const [k, v] of Object.entries(starlingKeys)) env[key(k)] = v
        return { ...cmd, env }
      }
    }
  }
  return [
    {
      name: 'starling-mem',
      describe: 'Starling, svc_bridge_mqtt, memory buffer',
      target: starling(false),
      bufferDir: null
    },
    {
      name: 'starling-disk',
      describe: 'Starling, svc_bridge_mqtt, disk buffer (queue.replayq_dir)',
      target: starling(true),
      bufferDir: (dataDir) => path.join(dataDir, 'replayq')
    },
    {
      name: 'mosquitto',
      describe: 'Mosquitto with its own bridge (connection/address/topic bench/# out 1)',
      target: mosquittoBridgeTarget,
      bufferDir: null
    }
  ]
}

/**
 * A local Mosquitto bridging `bench/#` out at QoS 1 to the remote. The settings a user would
 * pick for a bridge that must not lose QoS 1: `cleansession false` (Mosquitto's default: the
 * local session, and its queue, outlive a dropped link), no cap on its queue
 * (`max_queued_messages 0`; the default 1000 drops QoS 1 for the bridge past 1000 queued, after
 * the publisher had its PUBACK; Starling's memory buffer is capped at 5 GB), and 1000 in flight
 * (the Starling bridge's default is 32 batches × 32 = 1024). The queue is in memory only.
 */
export function mosquittoBridgeTarget (remotePort: number): BrokerTarget {
  return mosquittoTarget({
    maxQueuedMessages: 0,
    extraConf: [
      `connection ${BRIDGE_NAME}`,
      `address 127.0.0.1:${remotePort}`,
      `topic ${FORWARDED} out 1`,
      'bridge_protocol_version mqttv311',
      'cleansession false',
      'remote_clientid bench_mosquitto',
      `restart_timeout ${RECONNECT_S}`,
      'notifications false',
      'start_type automatic'
    ]
  })
}

/** The remote broker: a Mosquitto that keeps its port and its sessions across a stop. */
export class RemoteMosquitto {
  readonly dir: string
  private child: ChildProcess | null = null
  private tail = ''

  private constructor (readonly port: number) {
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'starling-bench-remote-'))
    // Mosquitto started as root runs as the `mosquitto` account: it must write its database here
    chmodSync(this.dir, 0o777)
  }

  /** Starts a remote on a free port. */
  static async start (): Promise<RemoteMosquitto> {
    const remote = new RemoteMosquitto(await freePort())
    await remote.restart()
    return remote
  }

  /** The running process's pid (0 while stopped). */
  get pid (): number {
    return this.child?.pid ?? 0
  }

  /** Starts it again (same port, same database); resolves once the port accepts connections. */
  async restart (): Promise<void> {
    const conf = path.join(this.dir, 'mosquitto.conf')
    writeFileSync(conf, [
      `listener ${this.port} 127.0.0.1`,
      'allow_anonymous true',
      'persistence true',
      `persistence_location ${this.dir}/`,
      // the drain's subscriber may be offline while the bridge delivers: queue for it
      'max_queued_messages 0',
      'max_inflight_messages 1000',
      'log_dest stderr',
      'log_type error',
      ''
    ].join('\n'), { mode: 0o644 })
    const child = spawn(findOnPath('mosquitto') as string, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] })
    this.child = child
    liveChildren.add(child)
    child.once('exit', () => liveChildren.delete(child))
    const keep = (chunk: Buffer): void => { this.tail = (this.tail + chunk.toString()).slice(-4000) }
    child.stdout?.on('data', keep)
    child.stderr?.on('data', keep)
    const deadline = Date.now() + 20_000
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`remote mosquitto exited at start:\n${this.tail}`)
      if (await accepts(this.port)) return
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    throw new Error(`remote mosquitto did not listen on ${this.port} within 20 s:\n${this.tail}`)
  }

  /** SIGTERM (Mosquitto saves its sessions and queued messages), waits for the exit. */
  async stop (): Promise<void> {
    const child = this.child
    this.child = null
    if (child === null || child.exitCode !== null || child.signalCode !== null) return
    const gone = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    await gone
    clearTimeout(timer)
  }

  /** Stops it and removes its directory. */
  async destroy (): Promise<void> {
    await this.stop()
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** True when `port` on loopback accepts a TCP connection now. */
async function accepts (port: number): Promise<boolean> {
  return await new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port })
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => resolve(false))
  })
}

/** Total size of the files under `dir` (0 when it does not exist). */
export function directoryBytes (dir: string): number {
  let total = 0
  let entries: string[]
  try {
    entries = readdirSync(dir)
  } catch {
    return 0
  }
  for (const entry of entries) {
    const file = path.join(dir, entry)
    try {
      const st = statSync(file)
      total += st.isDirectory() ? directoryBytes(file) : st.size
    } catch {
      // deleted meanwhile (an acknowledged segment)
    }
  }
  return total
}
