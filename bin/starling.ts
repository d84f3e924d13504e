/**
 * `starling [command]`: EMQ X's `emqx` script for a Starling node. Without a command (as
 * `foreground`) it runs the node in the foreground; `start` runs it as a daemon, `stop`,
 * `restart`, `ping` and `console` as EMQ X's do (docs/operations.md). Each command's module is
 * imported when it runs, so `ping` and `stop` load no part of the node.
 *
 * Options every command takes, before or after it: `--config <file>` (else $STARLING_CONFIG,
 * else `<etc>/starling.conf`) and `--etc-dir <dir>` (else $STARLING_ETC_DIR, else the
 * installation's etc/): the user's settings, outside the installation.
 */
import { Command } from 'commander'
import { VERSION } from '../node/version.js'
import type { LauncherOptions } from './launcher-config.js'

/** Runs the `starling` program with `argv` (as process.argv); the commands set the exit code. */
export async function main (argv: string[]): Promise<void> {
  const program = new Command('starling')
    .description('Run and control a Starling MQTT broker node (EMQ X\'s emqx script)')
    .version(VERSION)
    .option('-c, --config <file>', 'configuration file (default <etc>/starling.conf, or $STARLING_CONFIG)')
    .option('--etc-dir <dir>', 'the user\'s etc directory: starling.conf, acl.conf, plugins/*.conf (default $STARLING_ETC_DIR, else the installation\'s etc/)')
    .action(async () => { await foreground(program.opts<LauncherOptions>(), false) })
  const globals = (cmd: Command): LauncherOptions => cmd.optsWithGlobals<LauncherOptions>()
  program.command('foreground').description('Run the node in the foreground (the default; for systemd and containers)')
    .action(async (_opts, cmd: Command) => { await foreground(globals(cmd), false) })
  program.command('console').description('Run the node in the foreground with its log on the console')
    .action(async (_opts, cmd: Command) => { await foreground(globals(cmd), true) })
  program.command('start').description('Start the node as a daemon (pid file in node.data_dir, output in log.dir) and wait until it runs')
    .action(async (_opts, cmd: Command) => { process.exitCode = await (await import('./daemon.js')).start(globals(cmd)) })
  program.command('stop').description('Stop the daemon and wait until it has exited')
    .action(async (_opts, cmd: Command) => { process.exitCode = await (await import('./daemon.js')).stop(globals(cmd)) })
  program.command('restart').description('Stop the daemon if it runs, then start it')
    .action(async (_opts, cmd: Command) => { process.exitCode = await (await import('./daemon.js')).restart(globals(cmd)) })
  program.command('ping').description('Print pong when the node answers, else exit 1')
    .action(async (_opts, cmd: Command) => { process.exitCode = await (await import('./daemon.js')).ping(globals(cmd)) })
  await program.parseAsync(argv)
}

async function foreground (opts: LauncherOptions, toConsole: boolean): Promise<void> {
  await (await import('./foreground.js')).runForeground(opts, { console: toConsole })
}

main(process.argv).catch((err) => {
  console.error(`starling: ${err?.stack ?? err}`)
  process.exit(1)
})
