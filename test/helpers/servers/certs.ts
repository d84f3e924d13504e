/**
 * Test certificates from the `openssl` CLI (Debian package `openssl`): a CA, and leaf
 * certificates it signs (server and client use, EC P-256, valid 2 days), for the servers the
 * harness starts with `tls: true` and for tests of TLS clients (an https auth service).
 * Keys are written with mode 0600, as PostgreSQL insists.
 */
import { chmodSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { findBinary, runCommand } from './system.js'

/** A certificate and its key, as files and the certificate's PEM. */
export interface TestCertificate {
  /** PEM of the certificate. */
  readonly cert: string
  readonly certFile: string
  readonly keyFile: string
}

/** How to run openssl: as the test's user (default), or a server's account (`ctx.run`). */
export type RunArgv = (argv: readonly string[]) => Promise<string>

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2']

/** openssl; throws {@link MissingServerError} naming `openssl`. */
export function opensslBinary (): string {
  return findBinary(['openssl'], 'openssl')
}

/** A self-signed CA `<dir>/<name>.pem` (key `<name>-key.pem`) with subject `CN=<cn>`. */
export async function makeTestCa (dir: string, name = 'ca', cn = `Starling test CA ${name}`, run: RunArgv = runCommand): Promise<TestCertificate> {
  const certFile = join(dir, `${name}.pem`)
  const keyFile = join(dir, `${name}-key.pem`)
  await run([opensslBinary(), 'req', '-x509', ...EC, '-keyout', keyFile, '-out', certFile, '-subj', `/CN=${cn}`])
  chmodSync(keyFile, 0o600)
  return { cert: await readFile(certFile, 'utf8'), certFile, keyFile }
}

/**
 * A certificate `<dir>/<name>.pem` (key `<name>-key.pem`) signed by `ca`, subject `CN=<cn>`,
 * for both server and client use, with the subject alternative names `san` (default
 * `IP:127.0.0.1,DNS:localhost`, what a client of a harness server checks).
 */
export async function makeTestCert (dir: string, ca: TestCertificate, name: string, opts: { cn?: string, san?: string, run?: RunArgv } = {}): Promise<TestCertificate> {
  const certFile = join(dir, `${name}.pem`)
  const keyFile = join(dir, `${name}-key.pem`)
  await (opts.run ?? runCommand)([opensslBinary(), 'req', '-x509', '-CA', ca.certFile, '-CAkey', ca.keyFile, ...EC,
    '-keyout', keyFile, '-out', certFile, '-subj', `/CN=${opts.cn ?? 'localhost'}`,
    '-addext', `subjectAltName=${opts.san ?? 'IP:127.0.0.1,DNS:localhost'}`,
    '-addext', 'basicConstraints=critical,CA:FALSE',
    '-addext', 'extendedKeyUsage=serverAuth,clientAuth'])
  chmodSync(keyFile, 0o600)
  return { cert: await readFile(certFile, 'utf8'), certFile, keyFile }
}
