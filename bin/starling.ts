import { Command } from 'commander'
import { loadConfig, configFile, resolvePath, ConfigError } from '../node/config/index.js'
import { createLogger } from '../node/logger.js'
import { startStarling } from './assemble.js'
import { VERSION, packageRoot } from '../node/version.js'

/**
 * `starling [--config <file>]`: runs one node in the foreground until SIGTERM or SIGINT,
 * then stops it cleanly (stop accepting, DISCONNECT 0x8B to MQTT 5 clients, flush the store)
 * and exits 0. Configuration errors print one line and exit 1.
 */
export async function main (argv: string[]): Promise<void> {
  const program = new Command('starling')
    .description('Run a Starling MQTT broker node in the foreground')
    .version(VERSION)
    .option('-c, --config <file>', 'configuration file (default etc/starling.conf, or $STARLING_CONFIG)')
    .parse(argv)
  const opts = program.opts<{ config?: string }>()
  let config
  try {
    // relative paths (the default etc/starling.conf, acl_file, data, certificates) are the
    // installation's, wherever the node is started from; a --config file is the user's
    config = loadConfig({ file: opts.config, env: process.env, root: packageRoot() })
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`starling: ${err.message}`)
      process.exit(1)
    }
    throw err
  }
  let logger
  try {
    logger = createLogger({
      level: config['log.level'],
      node: config['node.name'],
      to: config['log.to'],
      // log.dir relative to the installation root, as the other path keys
      file: { dir: resolvePath(config, 'log.dir'), file: config['log.file'], rotationSize: config['log.rotation.size'], rotationCount: config['log.rotation.count'] }
    })
  } catch (err: any) {
    // a log file that cannot be created or written (permissions, a file where the directory should be)
    console.error(`starling: log.dir: cannot open the log file: ${err.message}`)
    process.exit(1)
  }
  const file = configFile(config)
  if (file !== undefined && !file.found) logger.warn({ file: file.path }, 'no configuration file; running on the embedded defaults and STARLING_* variables')
  let node
  try {
    node = await startStarling(config, { logger })
  } catch (err: any) {
    console.error(`starling: ${err.message}`)
    logger.flush(() => process.exit(1))
    setTimeout(() => process.exit(1), 2000)
    return
  }
  // As EMQ X does, say where the node listens whatever the log level (port 0 shows the port it got)
  for (const listener of node.listeners) {
    const info = listener.info()
    console.log(`Start ${info.protocol} listener on ${info.listen_on} successfully.`)
  }
  console.log(`Start cluster listener on ${node.cluster.mesh.listenOn} successfully.`)
  const api = node.api.server
  if (api !== undefined) console.log(`Start http:management listener on ${api.listenOn} successfully.`)
  console.log(`Starling ${VERSION} (${node.name}) is running now!`)
  // the log file is written asynchronously: wait until its lines are out (at most 2 s, a
  // stuck disk must not keep a stopping node alive; pino's exit handler writes the rest)
  const exitAfterFlush = (code: number): void => {
    setTimeout(() => process.exit(code), 2000)
    logger.flush(() => process.exit(code))
  }
  let signalled = false
  const shutdown = (signal: string): void => {
    if (signalled) return
    signalled = true
    logger.info({ signal }, 'stopping')
    node.stop().then(() => {
      logger.info('stopped')
      exitAfterFlush(0)
    }, (err) => {
      logger.error({ err }, 'error while stopping')
      exitAfterFlush(1)
    })
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))
}

main(process.argv).catch((err) => {
  console.error(`starling: ${err?.stack ?? err}`)
  process.exit(1)
})
