/**
 * Every key of `etc/starling.conf`: type, default (written as in the file, so the units
 * are in the text: `1m`, `1MB`), what it accepts, whether it can change at run time, and
 * one line of documentation. `docs/configuration.md` and the shipped `etc/starling.conf`
 * are rendered from this table (`render-docs.ts`); a test keeps them in step.
 *
 * Plugin keys (`retainer.`, `bridge.mqtt.`, `auth.` ...) are not here: each plugin
 * declares its own schema and loads `etc/plugins/<name>.conf` with `loadPluginConfig`.
 */
import { LOG_LEVELS, LOG_TARGETS } from '../log-levels.js'
import { FLAPPING_POLICY_PATTERN, RATE_PATTERN, FORCE_SHUTDOWN_PATTERN } from './value-types.js'
import type { ConfigSchema, ConfigValues, PathKeys } from './schema-types.js'

// a host is a name, an IPv4 address or a bracketed IPv6 address; seeds may add :<cluster port>
const HOST = String.raw`(?:[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])`
const NODE_NAME = new RegExp(String.raw`^[A-Za-z0-9_.-]+@${HOST}$`)
const SEED = String.raw`[A-Za-z0-9_.-]+@${HOST}(?::\d{1,5})?`
const NODE_NAME_LIST = new RegExp(String.raw`^${SEED}(?:\s*,\s*${SEED})*$`)
const TLS_VERIFY = ['verify_none', 'verify_peer'] as const
/** A zone name (EMQ X's atoms). */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_]*$/
/** A mountpoint: a topic prefix without wildcards (`%c`, `%u` substituted per client). */
export const MOUNTPOINT = /^[^#+]*$/
const MAX_PACKET = 268435455 // MQTT's Remaining Length limit, 256MB - 1 [MQTT-2.2.3]

/** The node's configuration schema. Key order is the order of the docs and the shipped file. */
export const CONFIG_SCHEMA = {
  // ---- node
  'node.name': { type: 'string', default: 'starling@127.0.0.1', live: false, pattern: NODE_NAME, hint: '<name>@<host>, such as starling@127.0.0.1', doc: 'Name of this node in the cluster; unique per cluster, the host part must reach this machine.' },
  'node.cookie': { type: 'string', default: 'starlingsecretcookie', live: false, secret: true, doc: 'Shared secret of the cluster: nodes with another cookie cannot connect. Change it in production (a node listening beyond loopback with this default warns at start).' },
  'node.data_dir': { type: 'path', default: 'data', live: false, doc: 'Directory for the durable store, the control socket and generated secrets; created 0700, its files 0600 (the node\'s user only).' },

  // ---- cluster
  'cluster.listen': { type: 'address', optional: true, default: '0.0.0.0:4370', live: false, doc: 'Address the cluster mesh listens on for other nodes; off: a node that will never cluster, with no mesh port (cluster join to or from it is refused).' },
  'cluster.discovery': { type: 'enum', values: ['manual', 'static'], default: 'manual', live: false, doc: 'How nodes find each other: manual (cluster join from the control tool) or static (cluster.static.seeds).' },
  'cluster.static.seeds': { type: 'string', default: '', allowEmpty: true, pattern: NODE_NAME_LIST, hint: 'comma-separated node names such as n1@10.0.0.1,n2@10.0.0.2', live: false, doc: 'Nodes to join at start when cluster.discovery = static.' },
  'cluster.autoheal': { type: 'bool', default: 'on', live: false, doc: 'Heal a partitioned cluster automatically once the nodes see each other again.' },
  'cluster.autoclean': { type: 'duration', default: '5m', live: false, doc: 'Remove a node that has been down this long from the cluster.' },

  // ---- listener.tcp
  'listener.tcp.external': { type: 'address', optional: true, default: '0.0.0.0:1883', live: false, doc: 'Address of the MQTT over TCP listener; off turns it off.' },
  'listener.tcp.external.acceptors': { type: 'int', default: '8', min: 1, max: 1024, live: false, doc: 'Acceptors of the MQTT/TCP listener (reported by the listeners API).' },
  'listener.tcp.external.max_conns': { type: 'int', default: '1024000', min: 1, live: false, doc: 'Most concurrent connections the MQTT/TCP listener accepts.' },
  'listener.tcp.external.proxy_protocol': { type: 'bool', default: 'off', live: false, doc: 'Every connection to the MQTT/TCP listener starts with a PROXY protocol header (v1 or v2) from a load balancer, and the client\'s address is the one it gives (connections API, ACL ipaddr rules, logs); a connection without a valid header is closed. docs/proxy-protocol.md.' },
  'listener.tcp.external.proxy_protocol_timeout': { type: 'duration', default: '3s', min: 1, live: false, doc: 'With proxy_protocol on: how long the MQTT/TCP listener waits for the PROXY header before closing the connection.' },
  'listener.tcp.external.zone': { type: 'string', default: 'external', pattern: ZONE_NAME, hint: 'a zone name such as external or internal', live: false, doc: 'Zone of the MQTT/TCP listener\'s clients: their zone.<name>.* keys apply (EMQ X 4\'s zones; docs/migration.md).' },
  'listener.tcp.external.mountpoint': { type: 'string', default: '', allowEmpty: true, pattern: MOUNTPOINT, hint: 'a topic prefix without wildcards, such as devicebound/ or user/%u/', live: false, doc: 'Topic prefix of the MQTT/TCP listener\'s clients (%c client id, %u username), over their zone\'s: added to what they publish and subscribe, taken off what they receive; empty: the zone\'s.' },

  // ---- listener.ssl
  'listener.ssl.external': { type: 'address', optional: true, default: '0.0.0.0:8883', live: false, doc: 'Address of the MQTT over TLS listener; off turns it off.' },
  'listener.ssl.external.acceptors': { type: 'int', default: '4', min: 1, max: 1024, live: false, doc: 'Acceptors of the MQTT/TLS listener (reported by the listeners API).' },
  'listener.ssl.external.max_conns': { type: 'int', default: '102400', min: 1, live: false, doc: 'Most concurrent connections the MQTT/TLS listener accepts.' },
  'listener.ssl.external.zone': { type: 'string', default: 'external', pattern: ZONE_NAME, hint: 'a zone name such as external or internal', live: false, doc: 'Zone of the MQTT/TLS listener\'s clients: their zone.<name>.* keys apply (EMQ X 4\'s zones; docs/migration.md).' },
  'listener.ssl.external.mountpoint': { type: 'string', default: '', allowEmpty: true, pattern: MOUNTPOINT, hint: 'a topic prefix without wildcards, such as devicebound/ or user/%u/', live: false, doc: 'Topic prefix of the MQTT/TLS listener\'s clients (%c client id, %u username), over their zone\'s: added to what they publish and subscribe, taken off what they receive; empty: the zone\'s.' },
  'listener.ssl.external.keyfile': { type: 'path', default: 'etc/certs/key.pem', live: false, doc: 'PEM private key of the MQTT/TLS listener (development keys are generated when missing).' },
  'listener.ssl.external.certfile': { type: 'path', default: 'etc/certs/cert.pem', live: false, doc: 'PEM certificate (chain) of the MQTT/TLS listener.' },
  'listener.ssl.external.cacertfile': { type: 'path', default: 'etc/certs/cacert.pem', live: false, doc: 'PEM CA certificates that client certificates are checked against.' },
  'listener.ssl.external.verify': { type: 'enum', values: TLS_VERIFY, default: 'verify_none', live: false, doc: 'verify_peer asks clients for a certificate and checks it against cacertfile; verify_none does not ask.' },
  'listener.ssl.external.fail_if_no_peer_cert': { type: 'bool', default: 'false', live: false, doc: 'With verify_peer: refuse clients that send no certificate.' },
  'listener.ssl.external.psk_ciphers': { type: 'string', default: 'PSK-AES128-CBC-SHA,PSK-AES256-CBC-SHA,PSK-3DES-EDE-CBC-SHA,PSK-RC4-SHA', live: false, doc: 'TLS 1.2 PSK cipher suites offered while svc_psk_file is loaded (EMQ X\'s list; suites this OpenSSL lacks, 3DES and RC4 in OpenSSL 3, are left out). TLS 1.3 PSK uses its own suites.' },
  'listener.ssl.external.peer_cert_as_username': { type: 'enum', values: ['off', 'cn', 'dn', 'crt', 'pem', 'md5'], default: 'off', live: false, doc: 'Take the MQTT username from the client certificate: cn its CN, dn its subject DN, crt the DER bytes, pem the DER in base64, md5 the DER\'s MD5 (hex); off: the CONNECT\'s. A client without a certificate keeps its own.' },
  'listener.ssl.external.handshake_timeout': { type: 'duration', default: '15s', min: 1, live: false, doc: 'Longest a TLS handshake may take before the connection is closed (EMQ X\'s default; Node\'s own is 120s). Bytes that only look like the start of a TLS record are waited for until then.' },
  'listener.ssl.external.proxy_protocol': { type: 'bool', default: 'off', live: false, doc: 'Every connection to the MQTT/TLS listener starts with a PROXY protocol header (v1 or v2) from a load balancer, and the client\'s address is the one it gives (connections API, ACL ipaddr rules, logs); a connection without a valid header is closed. Before the TLS handshake. docs/proxy-protocol.md.' },
  'listener.ssl.external.proxy_protocol_timeout': { type: 'duration', default: '3s', min: 1, live: false, doc: 'With proxy_protocol on: how long the MQTT/TLS listener waits for the PROXY header before closing the connection.' },

  // ---- listener.ws
  'listener.ws.external': { type: 'address', optional: true, default: '0.0.0.0:8083', live: false, doc: 'Address of the MQTT over WebSocket listener; off turns it off.' },
  'listener.ws.external.mqtt_path': { type: 'string', default: '/mqtt', pattern: /^\/\S*$/, hint: 'a URL path starting with /', live: false, doc: 'URL path of the MQTT/WebSocket endpoint.' },
  'listener.ws.external.acceptors': { type: 'int', default: '4', min: 1, max: 1024, live: false, doc: 'Acceptors of the MQTT/WebSocket listener (reported by the listeners API).' },
  'listener.ws.external.max_conns': { type: 'int', default: '102400', min: 1, live: false, doc: 'Most concurrent connections the MQTT/WebSocket listener accepts.' },
  'listener.ws.external.proxy_protocol': { type: 'bool', default: 'off', live: false, doc: 'Every connection to the MQTT/WebSocket listener starts with a PROXY protocol header (v1 or v2) from a load balancer, and the client\'s address is the one it gives (connections API, ACL ipaddr rules, logs); a connection without a valid header is closed. Before the HTTP upgrade. docs/proxy-protocol.md.' },
  'listener.ws.external.proxy_protocol_timeout': { type: 'duration', default: '3s', min: 1, live: false, doc: 'With proxy_protocol on: how long the MQTT/WebSocket listener waits for the PROXY header before closing the connection.' },
  'listener.ws.external.zone': { type: 'string', default: 'external', pattern: ZONE_NAME, hint: 'a zone name such as external or internal', live: false, doc: 'Zone of the MQTT/WebSocket listener\'s clients: their zone.<name>.* keys apply (EMQ X 4\'s zones; docs/migration.md).' },
  'listener.ws.external.mountpoint': { type: 'string', default: '', allowEmpty: true, pattern: MOUNTPOINT, hint: 'a topic prefix without wildcards, such as devicebound/ or user/%u/', live: false, doc: 'Topic prefix of the MQTT/WebSocket listener\'s clients (%c client id, %u username), over their zone\'s: added to what they publish and subscribe, taken off what they receive; empty: the zone\'s.' },

  // ---- listener.wss
  'listener.wss.external': { type: 'address', optional: true, default: '0.0.0.0:8084', live: false, doc: 'Address of the MQTT over secure WebSocket listener; off turns it off.' },
  'listener.wss.external.mqtt_path': { type: 'string', default: '/mqtt', pattern: /^\/\S*$/, hint: 'a URL path starting with /', live: false, doc: 'URL path of the MQTT/secure WebSocket endpoint.' },
  'listener.wss.external.acceptors': { type: 'int', default: '4', min: 1, max: 1024, live: false, doc: 'Acceptors of the MQTT/secure WebSocket listener (reported by the listeners API).' },
  'listener.wss.external.max_conns': { type: 'int', default: '16', min: 1, live: false, doc: 'Most concurrent connections the MQTT/secure WebSocket listener accepts.' },
  'listener.wss.external.zone': { type: 'string', default: 'external', pattern: ZONE_NAME, hint: 'a zone name such as external or internal', live: false, doc: 'Zone of the MQTT/secure WebSocket listener\'s clients: their zone.<name>.* keys apply (EMQ X 4\'s zones; docs/migration.md).' },
  'listener.wss.external.mountpoint': { type: 'string', default: '', allowEmpty: true, pattern: MOUNTPOINT, hint: 'a topic prefix without wildcards, such as devicebound/ or user/%u/', live: false, doc: 'Topic prefix of the MQTT/secure WebSocket listener\'s clients (%c client id, %u username), over their zone\'s: added to what they publish and subscribe, taken off what they receive; empty: the zone\'s.' },
  'listener.wss.external.keyfile': { type: 'path', default: 'etc/certs/key.pem', live: false, doc: 'PEM private key of the MQTT/secure WebSocket listener.' },
  'listener.wss.external.certfile': { type: 'path', default: 'etc/certs/cert.pem', live: false, doc: 'PEM certificate (chain) of the MQTT/secure WebSocket listener.' },
  'listener.wss.external.cacertfile': { type: 'path', default: 'etc/certs/cacert.pem', live: false, doc: 'PEM CA certificates that client certificates are checked against.' },
  'listener.wss.external.verify': { type: 'enum', values: TLS_VERIFY, default: 'verify_none', live: false, doc: 'verify_peer asks clients for a certificate and checks it against cacertfile; verify_none does not ask.' },
  'listener.wss.external.fail_if_no_peer_cert': { type: 'bool', default: 'false', live: false, doc: 'With verify_peer: refuse clients that send no certificate.' },
  'listener.wss.external.proxy_protocol': { type: 'bool', default: 'off', live: false, doc: 'Every connection to the MQTT/secure WebSocket listener starts with a PROXY protocol header (v1 or v2) from a load balancer, and the client\'s address is the one it gives (connections API, ACL ipaddr rules, logs); a connection without a valid header is closed. Before the TLS handshake. docs/proxy-protocol.md.' },
  'listener.wss.external.proxy_protocol_timeout': { type: 'duration', default: '3s', min: 1, live: false, doc: 'With proxy_protocol on: how long the MQTT/secure WebSocket listener waits for the PROXY header before closing the connection.' },

  // ---- management API and dashboard
  'management.listener.http': { type: 'address', optional: true, default: '0.0.0.0:8080', live: false, doc: 'Address of the management REST API (/api/v3/, /api/v4/, /status) over HTTP; off turns HTTP off.' },
  'management.listener.http.max_conns': { type: 'int', default: '512', min: 1, live: true, doc: 'Most concurrent connections of the management HTTP listener.' },
  'management.listener.https': { type: 'address', optional: true, default: '', live: false, doc: 'Address of the management REST API over HTTPS; off (or empty) turns HTTPS off.' },
  'management.listener.https.keyfile': { type: 'path', default: 'etc/certs/key.pem', live: false, doc: 'PEM private key of the management HTTPS listener.' },
  'management.listener.https.certfile': { type: 'path', default: 'etc/certs/cert.pem', live: false, doc: 'PEM certificate (chain) of the management HTTPS listener.' },
  'management.default_application.id': { type: 'string', default: 'admin', pattern: /^\S+$/, hint: 'an id without spaces', live: false, doc: 'AppId of the API application created at first start (Basic auth user of /api/v3/).' },
  'management.default_application.secret': { type: 'string', default: '', allowEmpty: true, live: false, secret: true, doc: 'Secret of that application; empty: one is generated at first start and shown once in the log. Stored only as a salted hash.' },
  'dashboard.listener.http': { type: 'address', optional: true, default: '0.0.0.0:18083', live: false, doc: 'Address of the dashboard (svc_dashboard: its sign-in, users and the whole /api/v3/ and /api/v4/ for signed-in users) over HTTP; off turns HTTP off.' },
  'dashboard.listener.https': { type: 'address', optional: true, default: '', live: false, doc: 'Address of the dashboard over HTTPS; off (or empty) turns HTTPS off. The session cookie is marked Secure on it.' },
  'dashboard.listener.https.keyfile': { type: 'path', default: 'etc/certs/key.pem', live: false, doc: 'PEM private key of the dashboard HTTPS listener.' },
  'dashboard.listener.https.certfile': { type: 'path', default: 'etc/certs/cert.pem', live: false, doc: 'PEM certificate (chain) of the dashboard HTTPS listener.' },
  'dashboard.listener.https.cacertfile': { type: 'path', default: 'etc/certs/cacert.pem', live: false, doc: 'PEM CA certificates that browser (client) certificates are checked against, read only with verify_peer.' },
  'dashboard.listener.https.verify': { type: 'enum', values: TLS_VERIFY, default: 'verify_none', live: false, doc: 'verify_peer asks browsers for a client certificate and refuses one that does not verify against cacertfile; verify_none does not ask.' },
  'dashboard.listener.https.fail_if_no_peer_cert': { type: 'bool', default: 'false', live: false, doc: 'With verify_peer: refuse browsers that send no certificate (mutual TLS before sign-in).' },
  'dashboard.default_user.login': { type: 'string', default: 'admin', pattern: /^[^\s:]+$/, hint: 'a user name without spaces or colons', live: false, doc: 'Name of the dashboard user created at first start (it cannot be deleted).' },
  'dashboard.default_user.password': { type: 'string', default: '', allowEmpty: true, live: false, secret: true, doc: 'Its password at first start; empty: one is generated and shown once in the log. Used only when the user is created (change it later with change_pwd or starling-ctl admins passwd); stored only as a bcrypt hash.' },

  // ---- authentication and access control
  'allow_anonymous': { type: 'bool', default: 'true', live: true, doc: 'Let clients connect without credentials when no auth plugin decides.' },
  'acl_nomatch': { type: 'enum', values: ['allow', 'deny'], default: 'allow', live: true, doc: 'Decision when no ACL rule matches a publish or subscribe.' },
  'acl_file': { type: 'path', default: 'etc/acl.conf', live: true, doc: 'File of ACL rules (EMQ X term syntax), loaded at start.' },
  'enable_acl_cache': { type: 'bool', default: 'on', live: true, doc: 'Cache ACL decisions per client.' },
  'acl_cache_max_size': { type: 'int', default: '32', min: 1, live: true, doc: 'Most ACL decisions cached per client.' },
  'acl_cache_ttl': { type: 'duration', default: '1m', min: 1, live: true, doc: 'How long a cached ACL decision is used.' },
  'acl_deny_action': { type: 'enum', values: ['ignore', 'disconnect'], default: 'ignore', live: true, doc: 'What a denied publish or subscribe does: ignore it (with a reason code) or disconnect the client.' },

  // ---- broker
  'broker.sys_interval': { type: 'duration', default: '1m', live: false, doc: 'Period of the $SYS/brokers/<node>/ statistics messages; 0 turns them off.' },
  'broker.sys_heartbeat': { type: 'duration', default: '30s', live: false, doc: 'Period of the $SYS uptime and datetime heartbeat messages; 0 turns them off.' },
  'broker.shared_subscription_strategy': { type: 'enum', values: ['random', 'round_robin', 'sticky', 'hash'], default: 'random', live: true, doc: 'How a message to a shared subscription picks one member of the group.' },

  // ---- mqtt
  'mqtt.max_packet_size': { type: 'size', default: '1MB', min: 2, max: MAX_PACKET, live: true, doc: 'Largest MQTT packet accepted (and the Maximum Packet Size advertised to v5 clients).' },
  'mqtt.max_clientid_len': { type: 'int', default: '65535', min: 23, max: 65535, live: true, doc: 'Longest client id accepted.' },
  'mqtt.max_topic_levels': { type: 'int', default: '0', min: 0, max: 65535, live: true, doc: 'Most levels in a topic name or filter; 0 = no limit.' },
  'mqtt.max_qos_allowed': { type: 'int', default: '2', min: 0, max: 2, live: true, doc: 'Highest QoS the broker accepts (Maximum QoS advertised to v5 clients).' },
  'mqtt.max_topic_alias': { type: 'int', default: '65535', min: 0, max: 65535, live: true, doc: 'Topic Alias Maximum advertised to v5 clients; 0 = no aliases.' },
  'mqtt.retain_available': { type: 'bool', default: 'true', live: true, doc: 'Accept retained messages.' },
  'mqtt.wildcard_subscription': { type: 'bool', default: 'true', live: true, doc: 'Accept subscriptions to filters with + or #.' },
  'mqtt.shared_subscription': { type: 'bool', default: 'true', live: true, doc: 'Accept shared subscriptions ($share/<group>/..., $queue/...).' },
  'mqtt.server_keepalive': { type: 'duration', default: '0', max: 65535000, live: true, doc: 'Server Keep Alive imposed on v5 clients, in whole seconds; 0 = off (clients keep what they ask).' },
  'mqtt.max_keepalive': { type: 'duration', default: '0', max: 65535000, live: true, doc: 'Most keep alive a client may ask for, in whole seconds (Mosquitto\'s max_keepalive): a v5 client asking for more, or for 0 (none), is told to use this (Server Keep Alive) and held to it; an MQTT 3.1/3.1.1 client asking for more, or for 0, is refused with CONNACK 0x02, as it cannot be told. 0 = no cap. New connections follow a change.' },
  'mqtt.keepalive_backoff': { type: 'float', default: '0.75', min: 0.5, max: 10, live: true, doc: 'A client is dropped after keepalive x backoff x 2 without a packet (0.75: after 1.5 x keepalive).' },
  'mqtt.max_inflight': { type: 'int', default: '32', min: 1, max: 65535, live: true, doc: 'QoS 1/2 messages in flight per client; also the Receive Maximum the broker advertises and enforces.' },
  'mqtt.max_mqueue_len': { type: 'int', default: '1000', min: 0, live: true, doc: 'Unsent messages an away persistent session keeps; beyond it the oldest goes (counted in messages/dropped and the session\'s mqueue_dropped); 0 = no limit.' },
  'mqtt.mqueue_store_qos0': { type: 'bool', default: 'true', live: true, doc: 'Queue QoS 0 messages for away persistent sessions too (off: only QoS 1/2 deliveries are queued).' },
  'mqtt.max_subscriptions': { type: 'int', default: '0', min: 0, live: true, doc: 'Most subscriptions per client; SUBSCRIBE filters beyond it get 0x97 Quota exceeded (0x80 for MQTT 3.1.1); 0 = no limit.' },
  'mqtt.session_expiry_interval': { type: 'duration', default: '2h', live: false, doc: 'Longest time a persistent session is kept after its client disconnects (caps what v5 clients ask).' },
  'mqtt.idle_timeout': { type: 'duration', default: '15s', min: 1, live: true, doc: 'Time allowed between accepting a connection and its CONNECT packet.' },
  'mqtt.max_awaiting_rel': { type: 'int', default: '100', min: 0, live: true, doc: 'Incoming QoS 2 messages awaiting PUBREL per client; a new QoS 2 PUBLISH beyond it is dropped and answered PUBREC 0x97 Quota exceeded (plain PUBREC for MQTT 3.1.1); 0 = no limit.' },
  'mqtt.await_rel_timeout': { type: 'duration', default: '300s', min: 1, live: true, doc: 'Time an incoming QoS 2 message (published on arrival) waits for its PUBREL before the broker forgets it (counted in messages/qos2/expired).' },
  'mqtt.retry_interval': { type: 'duration', default: '30s', min: 1, live: true, doc: 'Time before an unacknowledged QoS 1/2 PUBLISH (with DUP) or PUBREL is sent again to a connected MQTT 3.1/3.1.1 client; MQTT 5 clients get it again on reconnect only.' },
  'mqtt.ignore_loop_deliver': { type: 'bool', default: 'false', live: true, doc: 'Do not deliver a client\'s own messages back to it (MQTT 3.1/3.1.1 clients; MQTT 5 clients use No Local per subscription).' },
  'mqtt.strict_mode': { type: 'bool', default: 'false', live: true, doc: 'Checks beyond the MQTT standard: no control characters in strings, and payloads with Payload Format Indicator 1 must be UTF-8 (0x99). Standard protocol errors close the connection either way (docs/mqtt.md).' },

  // ---- flapping detection (EMQ X 4.4: the global policy and the zone's switch; docs/flapping.md)
  flapping_detect_policy: { type: 'string', default: '30, 1m, 5m', pattern: FLAPPING_POLICY_PATTERN, hint: '<count>, <window>, <ban time> such as 30, 1m, 5m', live: true, doc: 'A client disconnecting more than <count> times within <window> is banned by client id for <ban time> (when zone.external.enable_flapping_detect is on).' },
  'zone.external.enable_flapping_detect': { type: 'bool', default: 'false', live: true, doc: 'Ban clients that reconnect in a loop, by flapping_detect_policy (EMQ X 4.4\'s zone key; node-wide in Starling: zone external\'s value applies to every zone).' },

  // ---- connection rate limits (EMQ X 4.4's zone keys, off by default; docs/rate-limits.md)
  'zone.external.rate_limit.conn_messages_in': { type: 'string', default: '', allowEmpty: true, pattern: RATE_PATTERN, hint: '<count>,<period> such as 100,10s; empty is off', live: false, doc: 'PUBLISH packets a connection may send per period; above it the node stops reading the connection until its rate allows (no drop, no disconnect). For the clients of zone external (zone.<name>.rate_limit.conn_messages_in for another zone).' },
  'zone.external.rate_limit.conn_bytes_in': { type: 'string', default: '', allowEmpty: true, pattern: RATE_PATTERN, hint: '<size>,<period> such as 100KB,10s; empty is off', live: false, doc: 'Bytes a connection may send per period; above it the node stops reading the connection until its rate allows. For the clients of zone external (zone.<name>.rate_limit.conn_bytes_in for another zone).' },
  'zone.external.force_shutdown_policy': { type: 'string', default: '', allowEmpty: true, pattern: FORCE_SHUTDOWN_PATTERN, hint: '<max queue length>|<max size> such as 10000|64MB; empty is off', live: false, doc: 'A client with more messages waiting to be sent to it than <max queue length>, or more bytes than <max size>, is disconnected (MQTT 5: DISCONNECT 0x97 Quota exceeded). For the clients of zone external (zone.<name>.force_shutdown_policy for another zone).' },

  // ---- log
  'log.level': { type: 'enum', values: LOG_LEVELS, default: 'warning', live: true, doc: 'Least severe level written to the log.' },
  'log.to': { type: 'enum', values: LOG_TARGETS, default: 'console', live: false, doc: 'Where the log goes, as EMQ X 4: off, file (log.dir/log.file), console (standard output, JSON lines) or both. The level (log.level, starling-ctl log set-level) applies to every target.' },
  'log.dir': { type: 'path', default: 'log', live: false, doc: 'Directory of the log file (EMQ X 4: log.dir); created 0700 when missing, an existing one is left as it is.' },
  'log.file': { type: 'string', default: 'starling.log', pattern: /^[^/\\]+$/, hint: 'a file name without a directory (the directory is log.dir)', live: false, doc: 'Name of the log file in log.dir (EMQ X 4: log.file = emqx.log); JSON lines, mode 0600 (the log may carry client ids and usernames).' },
  'log.rotation.size': { type: 'size', default: '10MB', min: 1024, live: false, doc: 'Rotate the log file when it would grow past this size: starling.log becomes starling.log.1, older files move up one number (EMQ X 4 numbered its files emqx.log.1..N too).' },
  'log.rotation.count': { type: 'int', default: '5', min: 1, max: 1000, live: false, doc: 'Log files kept in all, the current one included (EMQ X 4: log.rotation.count), so the log takes at most about count x log.rotation.size; the oldest is dropped at rotation.' },

  // ---- sysmon: runtime warnings on $SYS/brokers/<node>/sysmon/<event> (docs/sys-topics.md)
  'sysmon.long_gc': { type: 'duration', default: '0', live: false, doc: 'Warn (sysmon/long_gc) when one garbage collection pause lasts longer than this; 0 = off.' },
  'sysmon.long_schedule': { type: 'duration', default: '240ms', live: false, doc: 'Warn (sysmon/long_schedule) when the event loop is blocked longer than this; 0 = off.' },
  'sysmon.large_heap': { type: 'size', default: '1GB', live: true, doc: 'Warn (sysmon/large_heap) when the JavaScript heap in use grows above this; 0 = off.' },

  // ---- os_mon and vm_mon: alarm thresholds (docs/alarms.md); percentages as EMQ X wrote them
  'os_mon.cpu_check_interval': { type: 'duration', default: '60s', min: 1, live: false, doc: 'How often the machine\'s CPU usage is checked (cpu_high_watermark alarm).' },
  'os_mon.cpu_high_watermark': { type: 'percent', default: '80%', live: true, doc: 'Raise cpu_high_watermark when CPU usage goes above this.' },
  'os_mon.cpu_low_watermark': { type: 'percent', default: '60%', live: true, doc: 'Clear cpu_high_watermark when CPU usage falls below this.' },
  'os_mon.mem_check_interval': { type: 'duration', default: '60s', min: 1, live: false, doc: 'How often memory use is checked (system_memory_high_watermark, process_memory_high_watermark).' },
  'os_mon.sysmem_high_watermark': { type: 'percent', default: '70%', live: true, doc: 'Raise system_memory_high_watermark while the machine\'s memory in use is above this share of its total.' },
  'os_mon.procmem_high_watermark': { type: 'percent', default: '5%', live: true, doc: 'Raise process_memory_high_watermark while this node\'s resident memory is above this share of the machine\'s total.' },
  'vm_mon.check_interval': { type: 'duration', default: '30s', min: 1, live: false, doc: 'How often open file descriptors are counted against the open-files limit (too_many_processes alarm).' },
  'vm_mon.process_high_watermark': { type: 'percent', default: '80%', live: true, doc: 'Raise too_many_processes when open file descriptors go above this share of the open-files limit.' },
  'vm_mon.process_low_watermark': { type: 'percent', default: '60%', live: true, doc: 'Clear too_many_processes when open file descriptors fall below this share of the limit.' }
} as const satisfies ConfigSchema

/** A key of `etc/starling.conf`. */
export type ConfigKey = keyof typeof CONFIG_SCHEMA

/**
 * The node's configuration: a flat, frozen object keyed by the spec's key strings,
 * `cfg['mqtt.max_packet_size']`. Durations are milliseconds, sizes bytes, addresses
 * `{ host, port, text }`, enums their literal words.
 */
export type StarlingConfig = ConfigValues<typeof CONFIG_SCHEMA>

/** The keys whose value is a path (`node.data_dir`, `acl_file`, the TLS files). */
export type ConfigPathKey = PathKeys<typeof CONFIG_SCHEMA>
