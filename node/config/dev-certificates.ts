/**
 * Development TLS files, so a fresh clone can start its TLS listeners (8883, 8084) with
 * the shipped defaults. The files come from `etc/certs/make-dev-certs.sh` (openssl);
 * they are git-ignored and must never be used in production.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Logger } from '../logger.js'

/** The files the shipped config points its TLS listeners at. */
export const DEV_CERTIFICATE_FILES = ['key.pem', 'cert.pem', 'cacert.pem'] as const

const SCRIPT = join('etc', 'certs', 'make-dev-certs.sh')

/** Options of `ensureDevCertificates`, for tests and unusual layouts. */
export interface EnsureDevCertificatesOptions {
  /** The generator script; by default `etc/certs/make-dev-certs.sh` of this checkout. */
  readonly script?: string
}

/**
 * Makes sure `dir` holds `key.pem`, `cert.pem` and `cacert.pem` (plus the CA key and a
 * client pair): when `key.pem` and `cert.pem` are both missing it runs the generator
 * script synchronously and returns true; when all three exist it returns false.
 *
 * Files an operator put there are never replaced: when `cert.pem` or `key.pem` exists but
 * the set is incomplete, it logs a warning and returns false, and the TLS listener will
 * report which file it cannot read. Call it only for directories the config points at by
 * default (`etc/certs`), never for an operator's own certificate paths.
 *
 * Throws an Error carrying the script's output when the script fails (no openssl, say).
 */
export function ensureDevCertificates (dir: string, logger?: Logger, opts: EnsureDevCertificatesOptions = {}): boolean {
  const log = logger?.child({ component: 'config:dev-certs' })
  const missing = DEV_CERTIFICATE_FILES.filter((f) => !existsSync(join(dir, f)))
  if (missing.length === 0) return false
  if (existsSync(join(dir, 'cert.pem')) || existsSync(join(dir, 'key.pem'))) {
    log?.warn({ dir, missing }, 'TLS files incomplete; not generating development certificates over existing ones')
    return false
  }
  const script = opts.script ?? findScript()
  log?.warn({ dir }, 'TLS certificates missing: generating development certificates (not for production)')
  try {
    execFileSync('bash', [script, dir], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 })
  } catch (err) {
    const e = err as { stderr?: Buffer, message: string }
    const detail = e.stderr?.toString().trim() || e.message
    throw new Error(`Could not generate development certificates in ${dir} with ${script}: ${detail}`)
  }
  log?.info({ dir }, 'development certificates written')
  return true
}

/**
 * Finds `etc/certs/make-dev-certs.sh` above this module: two levels up when running
 * from the sources (`node/config/`), three from the build (`dist/node/config/`).
 */
function findScript (): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, SCRIPT)
    if (existsSync(candidate)) return candidate
    dir = resolve(dir, '..')
  }
  throw new Error(`Could not find ${SCRIPT} above ${dirname(fileURLToPath(import.meta.url))}`)
}
