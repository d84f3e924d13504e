import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { loadPluginConfig, parseConfText } from '../../../node/config/index.js'
import { createRetainerPlugin } from '../../../plugins/retainer/plugin.js'
import { createDelayedPublishPlugin } from '../../../plugins/delayed_publish/plugin.js'
import { svcBridgeMqtt } from '../../../plugins/bridge_mqtt/plugin.js'

/** The plugins whose shipped files set every key (the auth plugins' files are tested beside them). */
const CORE_PLUGINS = [createRetainerPlugin(), createDelayedPublishPlugin(), svcBridgeMqtt]

const etc = fileURLToPath(new URL('../../../etc/plugins/', import.meta.url))

describe('shipped plugin files etc/plugins/<name>.conf', () => {
  it.each(CORE_PLUGINS.map(p => [p.name, p] as const))('%s exists, sets every key of its schema, and loads as the defaults', (name, def) => {
    const file = join(etc, `${name}.conf`)
    const text = readFileSync(file, 'utf8')
    const keys = parseConfText(text, file).map(e => e.key)
    // keys with a <name> segment (bridge.mqtt.<name>.*) have no value until a name is chosen:
    // such a file ships its sample commented out
    expect(keys.sort()).toEqual(Object.keys(def.configSchema).filter(k => !k.includes('<name>')).sort())
    const shipped = loadPluginConfig(file, def.configSchema, { env: {} })
    const defaults = loadPluginConfig(join(etc, 'does-not-exist.conf'), def.configSchema, { env: {}, optional: true })
    expect(shipped).toEqual(defaults)
  })

  it('gives the retainer the documented defaults: disc, no limit on count, 1MB payloads, no expiry', () => {
    const def = CORE_PLUGINS.find(p => p.name === 'svc_retainer')!
    expect(loadPluginConfig(join(etc, 'svc_retainer.conf'), def.configSchema, { env: {} })).toEqual({
      'retainer.storage_type': 'disc',
      'retainer.max_retained_messages': 0,
      'retainer.max_payload_size': 1024 * 1024,
      'retainer.expiry_interval': 0
    })
  })
})
