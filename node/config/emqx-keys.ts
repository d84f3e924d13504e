/**
 * EMQ X 4.4's configuration keys that are not Starling's own, so that an `emqx.conf` (and the
 * keys of its `plugins/*.conf`) loads unchanged. Each key has one outcome (docs/migration.md):
 *
 * - `alias`: EMQ X's name of a Starling key (`listener.tcp.external.max_connections` sets
 *   `listener.tcp.external.max_conns`): applied;
 * - `same`: a value that says what Starling always does (`listener.tcp.external.nodelay = true`):
 *   applied, silently; any other value is accepted with a warning line saying why it has no
 *   effect (`why`);
 * - `erlang`: a setting of the Erlang VM, its distribution or its OTP libraries: accepted
 *   with one warning line that says it has no meaning outside the Erlang VM;
 * - `plugin`: a key of an EMQ X plugin or module Starling does not have (yet): accepted with
 *   one warning line naming it;
 * - `absent`: a feature Starling does not have: accepted with one warning line saying so.
 *
 * A key that none of these (nor the schema, the zones or a plugin) knows is refused, as a
 * typo would be: nothing is silently ignored.
 */

/** What happens to one EMQ X key. */
export type EmqxOutcome =
  | { readonly kind: 'alias', readonly key: string }
  | { readonly kind: 'same' }
  | { readonly kind: 'warn', readonly why: 'erlang' | 'plugin' | 'absent', readonly text: string }

interface Rule {
  readonly pattern: RegExp
  /** The Starling key it sets (`$1` ... from the pattern). */
  readonly alias?: string
  readonly erlang?: string
  readonly plugin?: string
  /** Values (lower case) that say what Starling does: accepted silently. */
  readonly same?: readonly string[]
  /** What Starling does instead (for `absent`, and for `same` keys with another value). */
  readonly absent?: string
}

const LISTENER = String.raw`listener\.(tcp|ssl|ws|wss)\.external`
const TLS_LISTENER = String.raw`listener\.(ssl|wss)\.external`
const WS_LISTENER = String.raw`listener\.(ws|wss)\.external`
const r = (source: string): RegExp => new RegExp(`^${source}$`)

const TLS_OPTIONS = 'tls_versions|ciphers|depth|key_password|dhfile|honor_cipher_order|secure_renegotiate|reuse_sessions|partial_chain|verify_peer_ext_key_usage|enable_ocsp_stapling|ocsp_responder_url|ocsp_issuer_pem|ocsp_refresh_interval|ocsp_refresh_http_timeout|enable_crl_check|crl_cache_urls'

/** The rules, first match wins. */
const RULES: readonly Rule[] = [
  // ---- applied under Starling's name
  { pattern: r(`${LISTENER}\\.max_connections`), alias: 'listener.$1.external.max_conns' },
  { pattern: r(String.raw`management\.listener\.http\.max_clients`), alias: 'management.listener.http.max_conns' },

  // ---- the Erlang VM, its distribution and OTP
  { pattern: r(String.raw`node\.(heartbeat|async_threads|process_limit|max_ports|dist_buffer_size|max_ets_tables|global_gc_interval|fullsweep_after|crash_dump|ssl_dist_optfile|dist_net_ticktime|dist_use_interface|dist_listen_min|dist_listen_max|backtrace_depth)`), erlang: 'an Erlang VM or distribution setting' },
  { pattern: r(String.raw`cluster\.proto_dist`), erlang: 'the Erlang distribution\'s transport; Starling\'s mesh listens on cluster.listen' },
  { pattern: r(String.raw`rpc\.[a-z_]+`), erlang: 'gen_rpc, the Erlang RPC between nodes; Starling\'s nodes call each other over the cluster mesh' },
  { pattern: r(String.raw`log\.(chars_limit|max_depth|single_line|sync_mode_qlen|drop_mode_qlen|flush_qlen|overload_kill|overload_kill_qlen|overload_kill_mem_size|overload_kill_restart_after|burst_limit)`), erlang: 'a setting of the OTP logger' },
  { pattern: r(String.raw`listener\.(tcp|ssl|ws|wss)\.external\.(active_n|send_timeout|send_timeout_close|recbuf|sndbuf|buffer|tune_buffer|high_watermark|gc_after_handshake|hibernate_after|log_level)`), erlang: 'an option of the Erlang socket or TLS process' },
  { pattern: r(String.raw`broker\.(session_locking_strategy|route_batch_clean|perf\.route_lock_type|perf\.trie_compaction)`), erlang: 'a setting of the Mnesia/ekka route tables and locks' },
  { pattern: r(String.raw`sysmon\.(busy_port|busy_dist_port)`), erlang: 'an Erlang port monitor' },

  // ---- EMQ X modules and plugins Starling does not have
  { pattern: r(String.raw`modules\.loaded_file`), plugin: 'emqx_modules (its loaded_modules file)' },
  { pattern: r(String.raw`module\.presence\.[a-z_]+`), plugin: 'the presence module emqx_mod_presence (Starling publishes no $SYS/brokers/<node>/clients/<id>/connected)' },
  { pattern: r(String.raw`module\.subscription\.\d+\.(topic|qos|nl|rap|rh)`), plugin: 'the subscription module emqx_mod_subscription' },
  { pattern: r(String.raw`module\.rewrite\.(pub|sub)\.rule\.\d+`), plugin: 'the topic rewrite module emqx_mod_rewrite' },
  { pattern: r(String.raw`module\.slow_subs\.[a-z_]+`), plugin: 'the slow subscriptions module emqx_mod_slow_subs' },
  { pattern: r(String.raw`coap\..+`), plugin: 'emqx_coap' },
  { pattern: r(String.raw`lwm2m\..+`), plugin: 'emqx_lwm2m' },
  { pattern: r(String.raw`mqtt\.sn\..+`), plugin: 'emqx_sn' },
  { pattern: r(String.raw`stomp\..+`), plugin: 'emqx_stomp' },
  { pattern: r(String.raw`exhook\..+`), plugin: 'emqx_exhook' },
  { pattern: r(String.raw`exproto\..+`), plugin: 'emqx_exproto' },
  { pattern: r(String.raw`prometheus\..+`), plugin: 'emqx_prometheus' },
  { pattern: r(String.raw`web\.hook\..+`), absent: 'svc_web_hook reads it from etc/plugins/svc_web_hook.conf (or EMQ X\'s emqx_web_hook.conf there), not from the main file (docs/web-hook.md)' },
  { pattern: r(String.raw`auth\.(mnesia\.password_hash|client\.\d+\.(clientid|password)|user\.\d+\.(username|password))`), plugin: 'emqx_auth_mnesia (Starling has svc_auth_clientid and svc_auth_username: starling-ctl clientid/users add)' },

  // ---- Starling's behaviour already
  { pattern: r(`${LISTENER}\\.access\\.\\d+`), same: ['allow all'], absent: 'Starling\'s listeners take every address; use the ACL (ipaddr rules) to refuse some' },
  { pattern: r(`${LISTENER}\\.nodelay`), same: ['true', 'on'], absent: 'Starling always sets TCP_NODELAY' },
  { pattern: r(`${LISTENER}\\.reuseaddr`), same: ['true', 'on'], absent: 'Starling\'s listeners always set SO_REUSEADDR' },
  { pattern: r('(auth_order|acl_order)'), same: ['none'], absent: 'Starling orders the auth and ACL backends by their plugin priority' },
  { pattern: r(String.raw`mqtt\.exclusive_subscription`), same: ['false', 'off'], absent: 'Starling has no exclusive subscriptions ($exclusive/)' },
  { pattern: r(String.raw`broker\.shared_dispatch_ack_enabled`), same: ['false', 'off'], absent: 'Starling does not redispatch unacknowledged shared-subscription messages' },
  { pattern: r(String.raw`log\.rotation`), same: ['on', 'true'], absent: 'Starling always rotates the log file (log.rotation.size, log.rotation.count)' },
  { pattern: r(String.raw`log\.formatter`), same: ['json'], absent: 'Starling writes the log as JSON lines' },
  { pattern: r(String.raw`plugins\.etc_dir`), same: ['etc/plugins/', 'etc/plugins'], absent: 'Starling reads plugin files from the plugins directory of its etc directory' },
  { pattern: r(String.raw`plugins\.loaded_file`), same: ['data/loaded_plugins'], absent: 'Starling keeps the list of loaded plugins in node.data_dir/loaded_plugins' },
  { pattern: r(String.raw`alarm\.actions`), same: ['log,publish', 'publish,log'], absent: 'Starling always logs and publishes alarms' },
  { pattern: r(`${WS_LISTENER}\\.check_origin_enable`), same: ['false', 'off'], absent: 'Starling does not check the WebSocket Origin header' },
  { pattern: r(`${WS_LISTENER}\\.allow_origin_absence`), same: ['true', 'on'], absent: 'Starling does not check the WebSocket Origin header' },
  { pattern: r(`${WS_LISTENER}\\.compress`), same: ['false', 'off'], absent: 'Starling does not compress WebSocket frames' },
  { pattern: r(`${WS_LISTENER}\\.mqtt_piggyback`), same: ['multiple'], absent: 'Starling may send several MQTT packets in one WebSocket frame' },

  // ---- features Starling does not have
  { pattern: r(String.raw`cluster\.name`), absent: 'a Starling cluster is the nodes that share node.cookie' },
  { pattern: r(String.raw`cluster\.(mcast|dns|etcd|k8s)\.[a-z_.]+`), absent: 'Starling discovers nodes manually or from cluster.static.seeds (cluster.discovery = manual | static)' },
  { pattern: r(String.raw`log\.formatter\.text\.date\.format`), absent: 'Starling writes the log as JSON lines with epoch-millisecond times' },
  { pattern: r(String.raw`log\.(info|error|debug|warning|notice|critical|alert|emergency)\.file`), absent: 'Starling writes one log file (log.dir/log.file)' },
  { pattern: r(String.raw`mqtt\.response_information`), absent: 'Starling sends no Response Information in CONNACK' },
  { pattern: r(`${LISTENER}\\.(max_conn_rate|backlog)`), absent: 'Starling does not limit the connection rate of a listener, and uses Node.js\'s listen backlog' },
  { pattern: r(`${LISTENER}\\.peer_cert_as_clientid`), absent: 'Starling takes the username, not the client id, from a client certificate (peer_cert_as_username)' },
  { pattern: r(String.raw`listener\.(tcp|ws)\.external\.peer_cert_as_username`), absent: 'a TCP or WebSocket listener has no client certificate (listener.ssl.external.peer_cert_as_username takes it)' },
  { pattern: r(String.raw`listener\.wss\.external\.(peer_cert_as_username|psk_ciphers)`), absent: 'Starling offers these on the listener.ssl.external listener only' },
  { pattern: r(`${TLS_LISTENER}\\.(${TLS_OPTIONS})`), absent: 'Starling uses Node.js\'s TLS defaults (TLS 1.2 and 1.3, its cipher suites), without OCSP or CRL checks' },
  { pattern: r('crl_cache_http_timeout|crl_cache_refresh_interval'), absent: 'Starling does not check CRLs' },
  { pattern: r(`${WS_LISTENER}\\.(check_origins|fail_if_no_subprotocol|supported_subprotocols|proxy_address_header|proxy_port_header|idle_timeout|max_frame_size|deflate_opts\\.[a-z_]+)`), absent: 'Starling\'s WebSocket listeners have no such option (sub-protocols mqtt, mqttv3.1, mqttv3.1.1; frames up to 256MB)' },
  { pattern: r(String.raw`plugins\.expand_plugins_dir`), absent: 'Starling\'s plugins are built in; no directory is scanned' },
  { pattern: r(String.raw`broker\.(sample_group\.shared_subscription_strategy|[a-z_]+\.shared_subscription_strategy)`), absent: 'Starling has one shared subscription strategy for every group (broker.shared_subscription_strategy)' },
  { pattern: r(String.raw`broker\.(client_disconnect_discarded|client_disconnect_takeovered)`), absent: 'Starling emits client.disconnected for discarded and taken-over sessions always' },
  { pattern: r(String.raw`alarm\.(size_limit|validity_period)`), absent: 'Starling keeps the alarm history without these limits (docs/alarms.md)' },
  { pattern: r(String.raw`management\.listener\.(http|https)\.(acceptors|max_clients|backlog|send_timeout|send_timeout_close|inet6|ipv6_v6only|key_password|cacertfile|verify|tls_versions|ciphers|fail_if_no_peer_cert)`), absent: 'the management listener has no such option in Starling (management.listener.http.max_conns limits its connections)' },
  { pattern: r(String.raw`management\.(max_row_limit|application\.default_secret|bootstrap_apps_file)`), absent: 'Starling\'s management API has no such setting (apps are added with starling-ctl admins or the API)' }
]

/**
 * The outcome of an EMQ X key that is not a Starling key, or undefined when EMQ X 4.4 has no
 * such key either. `value` decides for `same` rules.
 */
export function emqxOutcome (key: string, value: string): EmqxOutcome | undefined {
  return outcomeBy(RULES, key, value)
}

function outcomeBy (rules: readonly Rule[], key: string, value: string): EmqxOutcome | undefined {
  for (const rule of rules) {
    const m = rule.pattern.exec(key)
    if (m === null) continue
    if (rule.alias !== undefined) return { kind: 'alias', key: rule.alias.replace(/\$(\d)/g, (_, i: string) => m[Number(i)]) }
    if (rule.erlang !== undefined) return { kind: 'warn', why: 'erlang', text: `${key} has no meaning outside the Erlang VM (${rule.erlang}); accepted without effect` }
    if (rule.plugin !== undefined) return { kind: 'warn', why: 'plugin', text: `${key} belongs to ${rule.plugin}, which Starling does not have (yet); accepted without effect` }
    if (rule.same?.includes(value.trim().toLowerCase().replace(/\s*,\s*/g, ',')) === true) return { kind: 'same' }
    return { kind: 'warn', why: 'absent', text: `${key} = ${clipValue(value)} is not a Starling setting (${rule.absent ?? 'no counterpart'}); accepted without effect` }
  }
  return undefined
}

/**
 * The directories EMQ X's release build writes into its files (`{{ platform_etc_dir }}`...),
 * as its zip release renders them: relative to the installation, so Starling resolves them
 * against its own root as every relative path (etc, data, log).
 */
export const PLATFORM_DIRS: Readonly<Record<string, string>> = {
  platform_etc_dir: 'etc',
  platform_data_dir: 'data',
  platform_log_dir: 'log',
  platform_plugins_dir: 'plugins'
}

/** `value` with `{{ platform_etc_dir }}` and the other placeholders of {@link PLATFORM_DIRS} rendered. */
export function renderPlatformDirs (value: string): string {
  if (!value.includes('{{')) return value
  return value.replace(/\{\{\s*(platform_[a-z]+_dir)\s*\}\}/g, (whole, name: string) => PLATFORM_DIRS[name] ?? whole)
}

/** A value as a warning line shows it: cut after 60 characters (cipher lists are long). */
export function clipValue (value: string): string {
  return value.length > 60 ? `${value.slice(0, 57)}...` : value
}

/**
 * Keys of EMQ X 4.4's files of the plugins Starling has (`emqx_auth_mongo.conf` ...) that the
 * Starling plugin's schema does not have: EMQ X 4.4's names of its keys, or keys accepted
 * without effect. `loadPluginConfig` asks here before it refuses a key.
 */
const PLUGIN_RULES: readonly Rule[] = [
  { pattern: r(String.raw`(management|dashboard)\..+`), absent: 'Starling reads the management and dashboard keys from its main file, starling.conf or emqx.conf' },
  { pattern: r(String.raw`bridge\.mqtt\.([A-Za-z0-9_-]+)\.clientid`), alias: 'bridge.mqtt.$1.client_id' },
  { pattern: r(String.raw`bridge\.mqtt\.([A-Za-z0-9_-]+)\.forward_mountpoint`), alias: 'bridge.mqtt.$1.mountpoint' },
  { pattern: r(String.raw`bridge\.mqtt\.([A-Za-z0-9_-]+)\.max_inflight_size`), alias: 'bridge.mqtt.$1.max_inflight_batches' },
  { pattern: r(String.raw`bridge\.mqtt\.([A-Za-z0-9_-]+)\.batch_size`), alias: 'bridge.mqtt.$1.queue.batch_count_limit' },
  { pattern: r(String.raw`auth\.ldap\.ssl`), alias: 'auth.ldap.ssl.enable' },
  { pattern: r(String.raw`auth\.mongo\.topology\.(max_overflow|overflow_ttl|overflow_check_period|socket_timeout_ms|server_selection_timeout_ms|min_heartbeat_frequency_ms)`), erlang: 'an option of the Erlang MongoDB driver\'s worker pool (poolboy)' },
  { pattern: r(String.raw`retainer\.stop_publish_clear_msg`), same: ['false', 'off'], absent: 'Starling forwards an empty retained message that clears a topic, as MQTT says' },
  { pattern: r(String.raw`rule_engine\.ignore_sys_message`), same: ['on', 'true'], absent: 'Starling\'s rules never see $SYS messages' },
  { pattern: r(String.raw`rule_engine\.events\.(client_connected|client_disconnected|session_subscribed|session_unsubscribed|message_delivered|message_acked|message_dropped)`), same: ['off', 'false'], absent: 'Starling does not publish events as $event/ MQTT messages; rules take them with FROM "$events/..."' }
]

/**
 * The outcome of a key of a Starling plugin's file that the plugin's schema does not have,
 * or undefined when EMQ X 4.4's file of that plugin has no such key either (a typo).
 */
export function emqxPluginKeyOutcome (key: string, value: string): EmqxOutcome | undefined {
  return outcomeBy(PLUGIN_RULES, key, value)
}

/**
 * EMQ X's name of a plugin's file beside Starling's: `etc/plugins/svc_auth_http.conf` ->
 * `etc/plugins/emqx_auth_http.conf` (read when Starling's is missing, so EMQ X's files can be
 * dropped in as they are); undefined for a file not named `svc_*.conf`.
 */
export function emqxPluginFile (file: string): string | undefined {
  const m = /^(.*[\\/])?svc_([a-z0-9_]+\.conf)$/.exec(file)
  return m === null ? undefined : `${m[1] ?? ''}emqx_${m[2]}`
}
