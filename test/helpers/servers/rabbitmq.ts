/**
 * A real RabbitMQ (Debian package `rabbitmq-server`, 3.10) for tests: the broker in the
 * foreground (`/usr/lib/rabbitmq/bin/rabbitmq-server`, which execs the Erlang VM under the same
 * PID) with AMQP 0-9-1 on 127.0.0.1:<free port>, Erlang distribution on 127.0.0.1:<free port>, a
 * unique node name, no plugins (management off), and its Mnesia database, message stores,
 * config, logs and Erlang cookie (`HOME`) in the temporary directory. The default user
 * `guest`/`guest` may log in, from loopback only.
 *
 * epmd, the Erlang port mapper every distributed node registers with, is started by the
 * harness first as a server of its own (`epmd -port <free port>`, loopback only, in the
 * foreground) and passed to the broker as `ERL_EPMD_PORT`: left to itself the VM would start
 * `epmd -daemon`, which detaches from the broker's process tree (a stop by PID would leave it
 * running) and, on the default port 4369, is shared by every instance on the host. The broker's
 * `stop()`/`kill()`/`restart()` leave this epmd running, as a host's epmd outlives a crashed
 * node; `close()` stops both.
 */
import amqp, { type ChannelModel } from 'amqplib'
import { randomBytes } from 'node:crypto'
import { connect as tcpConnect } from 'node:net'
import { join } from 'node:path'
import { SERVER_HOST, spawnServer, type ServerProcess } from './core.js'
import { findBinary } from './system.js'

const PACKAGE = 'rabbitmq-server'

/** The programs the harness runs for RabbitMQ. */
export interface RabbitmqBinaries { server: string, epmd: string }

/**
 * The foreground rabbitmq-server script and epmd (from `erlang-base`, a dependency of
 * `rabbitmq-server`); throws {@link MissingServerError} naming `rabbitmq-server`.
 */
export function rabbitmqBinaries (): RabbitmqBinaries {
  return {
    server: findBinary(['/usr/lib/rabbitmq/bin/rabbitmq-server'], PACKAGE),
    epmd: findBinary(['epmd', '/usr/lib/erlang/bin/epmd'], PACKAGE)
  }
}

/** A running RabbitMQ. */
export interface RabbitmqServer extends ServerProcess {
  /** `amqp://guest:guest@127.0.0.1:<port>` (the default virtual host `/`). */
  readonly url: string
  readonly user: string
  readonly password: string
  /** The Erlang node name (`rabbit-<random>@localhost`). */
  readonly nodeName: string
  /** The Erlang distribution port (= `ports[1]`). */
  readonly distPort: number
  /** The harness's epmd for this broker: running from the first start until `close()`. */
  readonly epmd: ServerProcess
  /** An amqplib connection as guest; the caller closes it (`close()`). */
  connect: () => Promise<ChannelModel>
}

/** Resolves once epmd accepts a TCP connection. */
async function tcpAnswers (host: string, port: number, timeoutMs: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const socket = tcpConnect({ host, port, timeout: timeoutMs }, () => { socket.destroy(); resolve() })
    socket.once('timeout', () => { socket.destroy(); reject(new Error('connect timed out')) })
    socket.once('error', reject)
  })
}

/** An amqplib connection whose later errors are only reported through `close`. */
async function amqpConnection (url: string, timeoutMs: number): Promise<ChannelModel> {
  const connection = await amqp.connect(url, { timeout: timeoutMs })
  connection.on('error', () => {}) // a broker stopped under the connection: 'close' follows, and calls in flight reject
  return connection
}

/** Starts RabbitMQ (and its epmd); see {@link RabbitmqServer}. Takes several seconds. */
export async function startRabbitmq (): Promise<RabbitmqServer> {
  const bin = rabbitmqBinaries()
  const user = 'guest'
  const password = 'guest'
  const nodeName = `rabbit-${randomBytes(4).toString('hex')}@localhost`
  const epmd = await spawnServer({
    name: 'epmd',
    debianPackage: PACKAGE,
    command: (ctx) => [bin.epmd, '-port', String(ctx.port), '-address', ctx.host],
    probe: async (ctx, timeoutMs) => await tcpAnswers(ctx.host, ctx.port, timeoutMs)
  })
  const urlOf = (port: number): string => `amqp://${user}:${password}@${SERVER_HOST}:${port}`
  let server: ServerProcess
  try {
    server = await spawnServer({
      name: 'RabbitMQ',
      debianPackage: PACKAGE,
      portCount: 2, // AMQP, Erlang distribution
      setup: async (ctx) => {
        ctx.writeFile('enabled_plugins', '[].\n', 0o644)
        ctx.writeFile('rabbitmq.conf', [
          'loopback_users.guest = true',
          // the distribution listener on loopback only (its port is RABBITMQ_DIST_PORT)
          'distribution.listener.interface = 127.0.0.1',
          // a test machine's disk may be fuller than the default 50 MB alarm allows
          'disk_free_limit.absolute = 1MB',
          'log.console = true',
          'log.console.level = warning',
          'log.file = false'
        ].join('\n') + '\n', 0o644)
      },
      // env(1) execs the script, which execs erl, which execs beam.smp: one PID throughout
      command: (ctx) => ['/usr/bin/env',
        // the script's mode for systemd: it execs the VM (which stops cleanly on SIGTERM itself)
        // instead of running it as a child behind a shell that relays signals, so a SIGKILL
        // reaches the VM, not the shell, as when the broker crashes
        'RUNNING_UNDER_SYSTEMD=true',
        `HOME=${ctx.dir}`, // the Erlang cookie
        `RABBITMQ_NODENAME=${nodeName}`,
        `RABBITMQ_NODE_IP_ADDRESS=${ctx.host}`,
        `RABBITMQ_NODE_PORT=${ctx.ports[0]}`,
        `RABBITMQ_DIST_PORT=${ctx.ports[1]}`,
        `ERL_EPMD_PORT=${epmd.port}`,
        // an epmd the VM or RabbitMQ's epmd check would start binds loopback, taken by ours: it exits
        `ERL_EPMD_ADDRESS=${ctx.host}`,
        `RABBITMQ_MNESIA_BASE=${join(ctx.dir, 'mnesia')}`,
        `RABBITMQ_LOG_BASE=${join(ctx.dir, 'log')}`,
        `RABBITMQ_CONFIG_FILE=${join(ctx.dir, 'rabbitmq.conf')}`,
        `RABBITMQ_ADVANCED_CONFIG_FILE=${join(ctx.dir, 'advanced.config')}`,
        `RABBITMQ_CONF_ENV_FILE=${join(ctx.dir, 'rabbitmq-env.conf')}`,
        `RABBITMQ_ENABLED_PLUGINS_FILE=${join(ctx.dir, 'enabled_plugins')}`,
        `RABBITMQ_PID_FILE=${join(ctx.dir, 'rabbitmq.pid')}`,
        // the VM must not start an epmd of its own: ours runs
        'RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-start_epmd false',
        bin.server],
      // the AMQP listener opens after every boot step: a completed handshake is a ready broker
      probe: async (ctx, timeoutMs) => { await (await amqpConnection(urlOf(ctx.port), timeoutMs)).close() }
    })
  } catch (err) {
    await epmd.close()
    throw err
  }
  const closeBroker = server.close
  return Object.assign(server, {
    url: urlOf(server.port),
    user,
    password,
    nodeName,
    distPort: server.ports[1],
    epmd,
    connect: async () => await amqpConnection(urlOf(server.port), 10_000),
    close: async () => {
      try {
        await closeBroker()
      } finally {
        await epmd.close()
      }
    }
  })
}
