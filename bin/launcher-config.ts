/**
 * What every `starling` command reads first: the configuration, found as the node finds it
 * (`--config`, $STARLING_CONFIG, the etc directory), with relative paths the installation's;
 * and the files a command shares with the running node: its pid file and its control socket.
 */
import { copyFileSync, chmodSync, constants, existsSync, mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig, resolvePath, ETC_DIR_ENV, type StarlingConfig } from '../node/config/index.js'
import { packageRoot } from '../node/version.js'

/** The options every `starling` command takes. */
export interface LauncherOptions {
  /** `--config <file>`, relative to the working directory. */
  config?: string
  /** `--etc-dir <dir>`, relative to the working directory. */
  etcDir?: string
}

/** The node's configuration for `opts`, with `overrides` winning over everything (throws ConfigError). */
export function loadLauncherConfig (opts: LauncherOptions, overrides?: Record<string, string>): StarlingConfig {
  // relative paths (the default etc/starling.conf, acl_file, data, certificates) are the
  // installation's, wherever the node is started from; a --config file is the user's
  return loadConfig({ file: opts.config, etcDir: opts.etcDir, env: process.env, root: packageRoot(), overrides })
}

/** The user's etc directory given by `--etc-dir` or $STARLING_ETC_DIR, if any (as given). */
export function givenEtcDir (opts: LauncherOptions): string | undefined {
  const fromEnv = process.env[ETC_DIR_ENV]
  return opts.etcDir ?? (fromEnv === undefined || fromEnv.trim() === '' ? undefined : fromEnv)
}

/** The node's pid file: `<node.data_dir>/starling.pid`, 0600, written by the running node. */
export function pidFilePath (cfg: StarlingConfig): string {
  return join(resolvePath(cfg, 'node.data_dir'), 'starling.pid')
}

/**
 * Gives the user's etc directory the files it lacks from the installation's etc/:
 * `starling.conf`, `acl.conf` and `plugins/*.conf`, each copied only when missing (an existing
 * file, the user's, is never touched), the directory 0700 and the copies 0600 (they may hold
 * passwords). A new release's new plugin files arrive at its first start; the user's settings
 * stay. Returns the files copied.
 */
export function seedEtcDir (etcDir: string, installEtc = join(packageRoot(), 'etc')): string[] {
  const copied: string[] = []
  mkdirSync(join(etcDir, 'plugins'), { recursive: true, mode: 0o700 })
  const files = ['starling.conf', 'acl.conf', ...readdirSync(join(installEtc, 'plugins')).filter((f) => f.endsWith('.conf')).map((f) => join('plugins', f))]
  for (const file of files) {
    const from = join(installEtc, file)
    const to = join(etcDir, file)
    if (!existsSync(from) || existsSync(to)) continue
    copyFileSync(from, to, constants.COPYFILE_EXCL)
    chmodSync(to, 0o600)
    copied.push(file)
  }
  return copied
}
