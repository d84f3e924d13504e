import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { configKeys, loadConfig, parseConfText, type StarlingConfig } from '../../../node/config/index.js'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const addr = (host: string, port: number) => ({ host, port, text: `${host}:${port}` })

/** The defaults the project brief lists, as the program sees them (ms, bytes, booleans). */
const EXPECTED: Record<keyof StarlingConfig, unknown> = {
  'node.name': 'starling@127.0.0.1',
  'node.cookie': 'starlingsecretcookie',
  'node.data_dir': 'data',
  'cluster.listen': addr('0.0.0.0', 4370),
  'cluster.discovery': 'manual',
  'cluster.static.seeds': '',
  'cluster.autoheal': true,
  'cluster.autoclean': 300_000,
  'listener.tcp.external': addr('0.0.0.0', 1883),
  'listener.tcp.external.acceptors': 8,
  'listener.tcp.external.max_conns': 1_024_000,
  'listener.tcp.external.proxy_protocol': false,
  'listener.tcp.external.proxy_protocol_timeout': 3_000,
  'listener.tcp.external.zone': 'external',
  'listener.tcp.external.mountpoint': '',
  'listener.ssl.external': addr('0.0.0.0', 8883),
  'listener.ssl.external.acceptors': 4,
  'listener.ssl.external.max_conns': 102_400,
  'listener.ssl.external.zone': 'external',
  'listener.ssl.external.mountpoint': '',
  'listener.ssl.external.keyfile': 'etc/certs/key.pem',
  'listener.ssl.external.certfile': 'etc/certs/cert.pem',
  'listener.ssl.external.cacertfile': 'etc/certs/cacert.pem',
  'listener.ssl.external.verify': 'verify_none',
  'listener.ssl.external.fail_if_no_peer_cert': false,
  'listener.ssl.external.psk_ciphers': 'PSK-AES128-CBC-SHA,PSK-AES256-CBC-SHA,PSK-3DES-EDE-CBC-SHA,PSK-RC4-SHA',
  'listener.ssl.external.peer_cert_as_username': 'off',
  'listener.ssl.external.handshake_timeout': 15_000,
  'listener.ssl.external.proxy_protocol': false,
  'listener.ssl.external.proxy_protocol_timeout': 3_000,
  'listener.ws.external': addr('0.0.0.0', 8083),
  'listener.ws.external.mqtt_path': '/mqtt',
  'listener.ws.external.acceptors': 4,
  'listener.ws.external.max_conns': 102_400,
  'listener.ws.external.proxy_protocol': false,
  'listener.ws.external.proxy_protocol_timeout': 3_000,
  'listener.ws.external.zone': 'external',
  'listener.ws.external.mountpoint': '',
  'listener.wss.external': addr('0.0.0.0', 8084),
  'listener.wss.external.mqtt_path': '/mqtt',
  'listener.wss.external.acceptors': 4,
  'listener.wss.external.max_conns': 16,
  'listener.wss.external.zone': 'external',
  'listener.wss.external.mountpoint': '',
  'listener.wss.external.keyfile': 'etc/certs/key.pem',
  'listener.wss.external.certfile': 'etc/certs/cert.pem',
  'listener.wss.external.cacertfile': 'etc/certs/cacert.pem',
  'listener.wss.external.verify': 'verify_none',
  'listener.wss.external.fail_if_no_peer_cert': false,
  'listener.wss.external.proxy_protocol': false,
  'listener.wss.external.proxy_protocol_timeout': 3_000,
  'management.listener.http': addr('0.0.0.0', 8080),
  'management.listener.http.max_conns': 512,
  'management.listener.https': null,
  'management.listener.https.keyfile': 'etc/certs/key.pem',
  'management.listener.https.certfile': 'etc/certs/cert.pem',
  'management.default_application.id': 'admin',
  'management.default_application.secret': '',
  'dashboard.listener.http': addr('0.0.0.0', 18083),
  'dashboard.listener.https': null,
  'dashboard.listener.https.keyfile': 'etc/certs/key.pem',
  'dashboard.listener.https.certfile': 'etc/certs/cert.pem',
  'dashboard.listener.https.cacertfile': 'etc/certs/cacert.pem',
  'dashboard.listener.https.verify': 'verify_none',
  'dashboard.listener.https.fail_if_no_peer_cert': false,
  'dashboard.default_user.login': 'admin',
  'dashboard.default_user.password': '',
  'allow_anonymous': true,
  'acl_nomatch': 'allow',
  'acl_file': 'etc/acl.conf',
  'enable_acl_cache': true,
  'acl_cache_max_size': 32,
  'acl_cache_ttl': 60_000,
  'acl_deny_action': 'ignore',
  'broker.sys_interval': 60_000,
  'broker.sys_heartbeat': 30_000,
  'broker.shared_subscription_strategy': 'random',
  'mqtt.max_packet_size': 1_048_576,
  'mqtt.max_clientid_len': 65_535,
  'mqtt.max_topic_levels': 0,
  'mqtt.max_qos_allowed': 2,
  'mqtt.max_topic_alias': 65_535,
  'mqtt.retain_available': true,
  'mqtt.wildcard_subscription': true,
  'mqtt.shared_subscription': true,
  'mqtt.server_keepalive': 0,
  'mqtt.max_keepalive': 0,
  'mqtt.keepalive_backoff': 0.75,
  'mqtt.max_inflight': 32,
  'mqtt.max_mqueue_len': 1000,
  'mqtt.mqueue_store_qos0': true,
  'mqtt.max_subscriptions': 0,
  'mqtt.session_expiry_interval': 7_200_000,
  'mqtt.idle_timeout': 15_000,
  'mqtt.max_awaiting_rel': 100,
  'mqtt.await_rel_timeout': 300_000,
  'mqtt.retry_interval': 30_000,
  'mqtt.ignore_loop_deliver': false,
  'mqtt.strict_mode': false,
  flapping_detect_policy: '30, 1m, 5m',
  'zone.external.enable_flapping_detect': false,
  'zone.external.rate_limit.conn_messages_in': '',
  'zone.external.rate_limit.conn_bytes_in': '',
  'zone.external.force_shutdown_policy': '',
  'log.level': 'warning',
  'log.to': 'console',
  'log.dir': 'log',
  'log.file': 'starling.log',
  'log.rotation.size': 10 * 1024 * 1024,
  'log.rotation.count': 5,
  'sysmon.long_gc': 0,
  'sysmon.long_schedule': 240,
  'sysmon.large_heap': 1024 ** 3,
  'os_mon.cpu_check_interval': 60_000,
  'os_mon.cpu_high_watermark': 0.8,
  'os_mon.cpu_low_watermark': 0.6,
  'os_mon.mem_check_interval': 60_000,
  'os_mon.sysmem_high_watermark': 0.7,
  'os_mon.procmem_high_watermark': 0.05,
  'vm_mon.check_interval': 30_000,
  'vm_mon.process_high_watermark': 0.8,
  'vm_mon.process_low_watermark': 0.6
}

describe('the shipped etc/starling.conf', () => {
  it('sets every key of the schema explicitly, each once', () => {
    const entries = parseConfText(readFileSync(root + 'etc/starling.conf', 'utf8'), 'etc/starling.conf')
    const keys = entries.map((e) => e.key)
    expect(new Set(keys).size).toBe(keys.length)
    expect([...keys].sort()).toEqual(configKeys().map((k) => k.key).sort())
  })

  it('loads to the documented defaults', () => {
    const cfg = loadConfig({ file: 'etc/starling.conf', cwd: root, env: {} })
    expect({ ...cfg }).toEqual(EXPECTED)
  })

  it('gives the same values as an empty configuration, so the file and the schema agree', () => {
    const fromFile = loadConfig({ file: 'etc/starling.conf', cwd: root, env: {} })
    const fromSchema = loadConfig({ cwd: '/nonexistent-starling-dir', env: {} })
    expect({ ...fromSchema }).toEqual({ ...fromFile })
  })
})
