/**
 * `starling foreground` (and `starling` alone, and `console`): runs one node in the foreground
 * until SIGTERM or SIGINT, then stops it cleanly (stop accepting, DISCONNECT 0x8B to MQTT 5
 * clients, flush the store) and exits 0. Configuration errors print one line and exit 1.
 * While it runs, `<node.data_dir>/starling.pid` holds its pid (`starling stop` reads it).
 */
import { readFileSync, rmSync, renameSync, writeFileSync } from 'node:fs'
import { ConfigError, configEtcDir, configFile, resolvePath } from '../node/config/index.js'
import { createLogger } from '../node/logger.js'
import { startStarling } from './assemble.js'
import { VERSION } from '../node/version.js'
import { givenEtcDir, loadLauncherConfig, pidFilePath, seedEtcDir, type LauncherOptions } from './launcher-config.js'

/** How `runForeground` runs: `console` sends the log to the console whatever `log.to` says. */
export interface ForegroundMode {
  console: boolean
}

/** Runs the node in the foreground (see the module comment); returns once it is running. */
export async function runForeground (opts: LauncherOptions, mode: ForegroundMode): Promise<void> {
  const etcDir = givenEtcDir(opts)
  let seeded: string[] = []
  let config
  try {
    if (etcDir !== undefined) seeded = seedEtcDir(etcDir)
    config = loadLauncherConfig(opts, mode.console ? { 'log.to': 'console' } : undefined)
  } catch (err: any) {
    if (err instanceof ConfigError) console.error(`starling: ${err.message}`)
    else console.error(`starling: etc directory ${etcDir}: ${err.message}`)
    process.exit(1)
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
  if (seeded.length > 0) logger.info({ etcDir: configEtcDir(config), files: seeded }, 'copied the installation\'s default settings into the etc directory')
  const file = configFile(config)
  if (file !== undefined && !file.found) logger.warn({ file: file.path }, 'no configuration file; running on the embedded defaults and STARLING_* variables')
  let node
  try {
    node = await startStarling(config, { logger, etcDir: configEtcDir(config) })
  } catch (err: any) {
    console.error(`starling: ${err.message}`)
    logger.flush(() => process.exit(1))
    setTimeout(() => process.exit(1), 2000)
    return
  }
  const pidFile = pidFilePath(config)
  // As EMQ X does, say where the node listens whatever the log level (port 0 shows the port it got)
  for (const listener of node.listeners) {
    const info = listener.info()
    console.log(`Start ${info.protocol} listener on ${info.listen_on} successfully.`)
  }
  if (config['cluster.listen'] !== null) console.log(`Start cluster listener on ${node.cluster.mesh.listenOn} successfully.`)
  const api = node.api.server
  if (api !== undefined) console.log(`Start ${api.protocol} listener on ${api.listenOn} successfully.`)
  console.log(`Starling ${VERSION} (${node.name}) is running now!`)
  showGeneratedSecret(config['management.default_application.id'], node.services.generatedApiSecret)
  // the log file is written asynchronously: wait until its lines are out (at most 2 s, a
  // stuck disk must not keep a stopping node alive; pino's exit handler writes the rest)
  const exitAfterFlush = (code: number): void => {
    removePidFile(pidFile)
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
  // last: whoever reads the pid (starling start, stop) finds a node that is up and stops cleanly on SIGTERM
  writePidFile(pidFile)
}

/** Writes this process's pid, 0600, replacing the file whole (a reader never sees half of it). */
function writePidFile (path: string): void {
  writeFileSync(`${path}.tmp`, `${process.pid}\n`, { mode: 0o600 })
  renameSync(`${path}.tmp`, path)
}

/** Removes the pid file when it still names this process (a newer node may have replaced it). */
function removePidFile (path: string): void {
  try {
    if (readFileSync(path, 'utf8').trim() === String(process.pid)) rmSync(path)
  } catch {
    // no pid file (removed by hand): nothing to remove
  }
}

/**
 * At the first start, the default application's generated secret: once, on stderr, after
 * the listeners are open (so it is the last thing a terminal shows), the secret alone on
 * its line so that a script can take it.
 */
function showGeneratedSecret (appId: string, secret: string | null): void {
  if (secret === null) return
  console.error(`The management API's default application "${appId}" was created with this generated secret (HTTP Basic ${appId}:<secret>; shown only now, keep it; management.default_application.secret sets your own):`)
  console.error(secret)
}
