/**
 * `svc_psk_file`: TLS-PSK on the MQTT SSL listener from a file of `identity:key` lines, as
 * EMQ X 4.4's emqx_psk_file (docs/auth/svc_psk_file.md).
 *
 * Loading reads the file once and hands the listener a lookup (MqttListener.setPsk): new
 * handshakes then offer the PSK suites (`listener.ssl.external.psk_ciphers` for TLS 1.2,
 * TLS 1.3's own SHA-256 suites) and a client's identity is checked in the handshake (Node's
 * `pskCallback`): an unknown identity or a wrong key fails the handshake. Unloading takes the
 * lookup and the suites away; established connections stay. Edit the file, then
 * `plugins reload svc_psk_file`.
 *
 * The key is the text after the delimiter, as bytes (EMQ X: `client1:1234` is the 4-byte key
 * "1234", which OpenSSL-style clients give in hex as 31323334); `psk.file.key_encoding = hex`
 * reads it as hex instead.
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { ConfigError, configRoot, type ConfigSchema } from '../../../node/config/index.js'
import type { Logger } from '../../../node/logger.js'
import type { PluginDefinition, PluginInstance } from '../../../node/plugins/types.js'
import { supportedPskCiphers } from '../../../node/mqtt/listeners.js'
import { VERSION } from '../../../node/version.js'

/** The plugin's keys: EMQ X 4.4's, plus the key encoding. */
export const PSK_CONFIG_SCHEMA: ConfigSchema = {
  'psk.file.path': { type: 'path', default: 'etc/psk.txt', live: false, doc: 'The file of identity<delimiter>key lines (relative paths from the install root).' },
  'psk.file.delimiter': { type: 'string', default: ':', live: false, doc: 'What separates the identity from the key on a line (the first occurrence).' },
  'psk.file.key_encoding': { type: 'enum', values: ['text', 'hex'], default: 'text', live: false, doc: 'text: the key is the text after the delimiter, as UTF-8 bytes (EMQ X); hex: it is hexadecimal. Not in EMQ X 4.4.' }
}

/** The longest PSK OpenSSL takes (PSK_MAX_PSK_LEN). */
const MAX_PSK_BYTES = 256

/**
 * The identities and keys of a PSK file's text. Empty lines and lines starting with `#` are
 * skipped; a line without the delimiter, with an empty identity or key, or a bad hex key is
 * skipped with a warning (EMQ X stopped reading at the first such line). A later line for
 * an identity wins.
 */
export function parsePskFile (text: string, delimiter: string, encoding: 'text' | 'hex', logger?: Logger, file = 'psk file'): Map<string, Buffer> {
  const keys = new Map<string, Buffer>()
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/\r$/, '')
    if (line.trim() === '' || line.startsWith('#')) return
    const at = line.indexOf(delimiter)
    const identity = at < 0 ? '' : line.slice(0, at)
    const keyText = at < 0 ? '' : line.slice(at + delimiter.length)
    const key = encoding === 'hex'
      ? (/^(?:[0-9a-fA-F]{2})+$/.test(keyText) ? Buffer.from(keyText, 'hex') : undefined)
      : Buffer.from(keyText, 'utf8')
    if (identity === '' || key === undefined || key.length === 0 || key.length > MAX_PSK_BYTES) {
      logger?.warn({ file, line: i + 1 }, `svc_psk_file: line ${i + 1} is not identity${delimiter}key (${encoding}, 1-${MAX_PSK_BYTES} bytes); skipped`)
      return
    }
    keys.set(identity, key)
  })
  return keys
}

/** The `svc_psk_file` plugin. */
export const svcPskFile: PluginDefinition = {
  name: 'svc_psk_file',
  version: VERSION,
  description: 'TLS-PSK on the MQTT SSL listener from a file (EMQ X 4.4 emqx_psk_file)',
  type: 'auth',
  configSchema: PSK_CONFIG_SCHEMA,
  loadedByDefault: false,
  load: async ({ node, config, logger }): Promise<PluginInstance> => {
    const path = resolve(configRoot(node.config), config['psk.file.path'])
    const delimiter: string = config['psk.file.delimiter']
    let text: string
    try {
      text = readFileSync(path, 'utf8')
    } catch (err) {
      throw ConfigError.badValue('psk.file.path', config['psk.file.path'], `a readable file (${(err as Error).message})`, 'plugin config')
    }
    const keys = parsePskFile(text, delimiter, config['psk.file.key_encoding'], logger, path)
    const listener = node.listeners.find((l) => l.spec.protocol === 'mqtt:ssl')
    const ciphers = String((node.config as Record<string, unknown>)['listener.ssl.external.psk_ciphers'] ?? '').split(',')
    if (listener === undefined) {
      logger.warn('svc_psk_file: the MQTT SSL listener is off (listener.ssl.external is empty); no handshake will use the keys')
    } else {
      let refused = 0
      listener.setPsk({
        lookup: (identity) => {
          const key = keys.get(identity)
          if (key === undefined && refused++ % 1000 === 0) logger.info({ identity }, 'svc_psk_file: unknown PSK identity; handshake refused')
          return key
        },
        ciphers
      })
    }
    logger.info({ path, identities: keys.size, tls12Ciphers: supportedPskCiphers(ciphers) }, 'svc_psk_file loaded')
    return {
      unload: async () => {
        listener?.setPsk(undefined)
        logger.info('svc_psk_file unloaded')
      }
    }
  }
}
