/**
 * Renders `docs/configuration.md` and the shipped `etc/starling.conf` from the schema, so
 * the three never disagree. Both outputs are committed; `test/node/config/docs.test.ts`
 * fails when they drift and rewrites them when run with `UPDATE_CONFIG_DOCS=1`.
 */
import { CONFIG_FILE_ENV, DEFAULT_CONFIG_FILE, configKeys } from './load-config.js'
import { PLUGIN_KEY_PREFIXES } from './plugin-config.js'
import { ETC_DIR_ENV } from './environment.js'
import type { ConfigKeyInfo } from './schema-types.js'
import { allowedText } from './convert-value.js'
import { ZONE_KEYS } from './zones.js'

/** Section titles by key prefix; the first matching prefix wins, '' matches every key. */
const SECTIONS: ReadonlyArray<readonly [prefix: string, title: string]> = [
  ['node.', 'Node'],
  ['cluster.', 'Cluster'],
  ['listener.tcp.', 'MQTT over TCP listener'],
  ['listener.ssl.', 'MQTT over TLS listener'],
  ['listener.ws.', 'MQTT over WebSocket listener'],
  ['listener.wss.', 'MQTT over secure WebSocket listener'],
  ['management.', 'Management API'],
  ['dashboard.', 'Dashboard'],
  ['broker.', 'Broker'],
  ['mqtt.', 'MQTT protocol limits and session behaviour'],
  ['log.', 'Log'],
  ['sysmon.', 'Runtime warnings (sysmon)'],
  ['os_mon.', 'OS monitor alarms'],
  ['vm_mon.', 'VM monitor alarms'],
  ['', 'Authentication and access control']
]

function sectionOf (key: string): string {
  return (SECTIONS.find(([prefix]) => key.startsWith(prefix)) as readonly [string, string])[1]
}

/** Keys grouped by section, in schema order. */
function sections (): Array<{ title: string, keys: ConfigKeyInfo[] }> {
  const out: Array<{ title: string, keys: ConfigKeyInfo[] }> = []
  for (const info of configKeys()) {
    const title = sectionOf(info.key)
    const last = out[out.length - 1]
    if (last?.title === title) last.keys.push(info)
    else out.push({ title, keys: [info] })
  }
  return out
}

/** The text of the shipped `etc/starling.conf`: every key at its default, documented above it. */
export function renderDefaultConfFile (): string {
  const lines = [
    '##====================================================================',
    '## Starling configuration',
    '##',
    '## One `key = value` per line. Lines starting with # are comments; there are',
    '## no comments at the end of a line. Durations: 500ms, 30s, 1m, 1h30m, 1d, 1w',
    '## (a bare number is seconds). Sizes: 64KB, 1MB, 2GB (a bare number is bytes).',
    '## Booleans: on, off, true, false. Relative paths are relative to the',
    '## installation root (the directory of Starling\'s package.json), wherever',
    '## the node is started from.',
    '##',
    '## Every key can be set from the environment: STARLING_ + the key in upper',
    '## case with each . written __ (node.data_dir -> STARLING_NODE__DATA_DIR).',
    '## See docs/configuration.md. This file is generated from the schema in',
    '## node/config/schema.ts: change the schema, then regenerate it.',
    '##===================================================================='
  ]
  for (const section of sections()) {
    lines.push('', '##--------------------------------------------------------------------', `## ${section.title}`,
      '##--------------------------------------------------------------------')
    for (const k of section.keys) {
      lines.push('', `## ${k.doc}`, '##', `## Value: ${k.allowed}`,
        `## Default: ${k.default === '' ? '(empty)' : k.default}`,
        `## Takes effect: ${k.live ? 'at run time' : 'after a restart'}`,
        `${k.key} =${k.default === undefined || k.default === '' ? '' : ` ${k.default}`}`)
    }
  }
  return lines.join('\n') + '\n'
}

/** The text of `docs/configuration.md`: the rules, then a table of every key. */
export function renderConfigurationDoc (): string {
  const out: string[] = [
    '# Configuration',
    '',
    '<!-- Generated from node/config/schema.ts by node/config/render-docs.ts; do not edit by hand.',
    '     Regenerate: UPDATE_CONFIG_DOCS=1 NODE_OPTIONS=--experimental-vm-modules npx jest test/node/config/docs -->',
    '',
    'A node reads one file of `key = value` lines, in the style of EMQ X 4\'s `emqx.conf`.',
    'Every key has a default, so the file only needs the keys you change.',
    '',
    '## Where the configuration comes from',
    '',
    'Each key takes the value of the last of these that sets it:',
    '',
    '1. the default in the table below;',
    `2. the config file: the \`--config <file>\` option of \`starling\`; without it the file named by the \`${CONFIG_FILE_ENV}\` environment variable; without that \`starling.conf\` in the user's etc directory when \`--etc-dir <dir>\` or \`${ETC_DIR_ENV}\` names one (where a path written \`etc/...\` also points; docs/operations.md); without that \`${DEFAULT_CONFIG_FILE}\` under the installation root (the directory of Starling's package.json). A file given by \`--config\` or \`${CONFIG_FILE_ENV}\` must exist and is found relative to the directory you run the command in; a missing \`${DEFAULT_CONFIG_FILE}\` means "all defaults", and the node says so once at start. Relative paths inside the file and in the environment (\`node.data_dir\`, \`acl_file\`, certificate files) resolve against the installation root wherever the node is started from, as EMQ X's resolve against its install root;`,
    '3. environment variables (next section);',
    '4. overrides passed by the program that starts the node (tests use them).',
    '',
    'The whole configuration is checked at start-up. An unknown key (with the closest known key suggested), a value the key does not accept, or a line that is not `key = value` stops the node with one line naming the place, the key, the value and what is allowed; every such line of the file, the environment and the overrides is reported in the same start:',
    '',
    '```',
    'etc/starling.conf:12: bad value "abc" for mqtt.max_packet_size: expected a size such as 1MB, 64KB or 1048576 from 2 to 268435455',
    'environment STARLING_MQTT__MAX_PAKCET_SIZE: unknown key "mqtt.max_pakcet_size" (did you mean STARLING_MQTT__MAX_PACKET_SIZE?)',
    '```',
    '',
    'EMQ X 4.4\'s `emqx.conf` loads unchanged (`starling --config emqx.conf`): its keys are applied under Starling\'s meaning, or accepted with one warning line each saying why they have no effect, and its `{{ platform_etc_dir }}`-style placeholders are rendered as EMQ X\'s release does (`etc`, `data`, `log`, `plugins`, relative to the installation root). docs/migration.md lists every key.',
    '',
    '## Environment variables',
    '',
    'Every key can be set by the variable `STARLING_` + the key in upper case with each `.` written `__`:',
    '`listener.tcp.external` is `STARLING_LISTENER__TCP__EXTERNAL`, `node.data_dir` is `STARLING_NODE__DATA_DIR`. The value is written as in the file.',
    `A \`STARLING_\` variable that names no key is an error, except \`${CONFIG_FILE_ENV}\` (the config file), \`${ETC_DIR_ENV}\` (the etc directory) and variables that belong to plugin keys (below), which the plugins read.`,
    '',
    '## File syntax',
    '',
    '- One `key = value` per line; blanks around `=` and at both ends are ignored. The value is the rest of the line, `=` and `#` included.',
    '- A line whose first non-blank character is `#` is a comment (`##` by convention). There are no end-of-line comments, because values such as topic filters contain `#`.',
    '- A value in double quotes is taken without them; `""` is an explicit empty value.',
    '- A key set twice keeps the later value.',
    '',
    '## Value types',
    '',
    '| type | written as | value the program sees |',
    '|---|---|---|',
    '| duration | `500ms`, `30s`, `1m`, `2h`, `1d`, `1w`, combinations such as `1h30m` or `1m30s500ms`; decimals such as `1.5m`; units are case-insensitive. **A bare number is seconds** (`30` = `30s`). | milliseconds |',
    '| size | `64KB`, `1MB`, `2GB` (powers of 1024, case-insensitive) or a bare number of bytes | bytes |',
    '| bool | `on`, `off`, `true`, `false` | boolean |',
    '| int, float | a decimal number, within the key\'s range | number |',
    '| address | `ip:port`, `[ipv6]:port`, `hostname:port`, or a bare `port` meaning `0.0.0.0:port`. Port `0` picks a free port. | `{ host, port, text }` |',
    '| enum | one of the listed words | the word |',
    '| path | a file or directory path, kept as written; relative paths are resolved against the installation root | text |',
    '| string | text, sometimes with a required form | text |',
    '',
    'Durations follow EMQ X\'s cuttlefish (`ms s m h d w`, summed terms, decimals, rounded to the millisecond), except that cuttlefish refused a number without a unit: here it means seconds, which is how EMQ X 4 wrote keys such as `server_keepalive`. Write a unit and the question never arises. Sizes follow cuttlefish\'s `bytesize` (`KB` = 1024 bytes).',
    '',
    '"Live" keys are marked as able to change while the node runs; "restart" keys (listener addresses, node name, data directory, TLS files) take effect only when the node starts. Nothing reloads configuration at run time yet; the flag records which keys could be.',
    '',
    '## Plugin configuration',
    '',
    `Keys starting with ${PLUGIN_KEY_PREFIXES.map((p) => `\`${p}\``).join(', ')} belong to plugins. They are refused in \`${DEFAULT_CONFIG_FILE}\` and live in the plugin's own file, \`etc/plugins/<plugin>.conf\`, with the same syntax, value types and environment-variable rule. Keys with a name the user chooses, such as \`bridge.mqtt.<name>.address\`, take any name made of letters, digits, \`_\` and \`-\` (names set through the environment are lower case).`,
    '',
    '## Keys'
  ]
  for (const section of sections()) {
    out.push('', `### ${section.title}`, '', '| key | type | default | accepts | changes | description |', '|---|---|---|---|---|---|')
    for (const k of section.keys) {
      const def = k.default === '' ? '(empty)' : `\`${k.default ?? ''}\``
      out.push(`| \`${k.key}\` | ${k.type} | ${def} | ${cell(k.allowed)} | ${k.live ? 'live' : 'restart'} | ${cell(k.doc)} |`)
    }
  }
  out.push('', '### Listeners of other names', '',
    'Beside `listener.<kind>.external`, a listener of any other name (letters, digits and `_`) is opened when its address is set, as EMQ X 4\'s `listener.tcp.internal = 127.0.0.1:11883`: `listener.<kind>.<name>` takes every key the external listener of its kind has (`listener.tcp.internal.zone`, `.max_conns`, `.mountpoint` ...), with the same defaults. Keys of a listener without an address open nothing and are warned of.')
  out.push('', '### Zones', '',
    'EMQ X 4\'s zones: `zone.<name>.<key>` sets a key for the clients of the listeners whose `listener.<kind>.external.zone` names the zone (`external` by default); any name made of letters, digits and `_` starting with a letter. A zone key that is not set takes the node-wide key in the \'falls back to\' column, else its default. "per zone" keys apply to each connection by its listener\'s zone; "node-wide" keys are held once per node: `zone.external.<key>` sets the node-wide key, and another zone\'s different value is accepted with a warning line (docs/migration.md). The keys of zone `external` in the tables above are that zone\'s.',
    '', '| key | type | default | accepts | applies | falls back to | description |', '|---|---|---|---|---|---|---|')
  for (const [key, entry] of Object.entries(ZONE_KEYS)) {
    const def = entry.spec.default === undefined || entry.spec.default === '' ? '(empty)' : `\`${entry.spec.default}\``
    const node = entry.node === undefined ? '' : `\`${entry.node}\``
    out.push(`| \`zone.<name>.${key}\` | ${entry.spec.type} | ${def} | ${cell(allowedText(entry.spec))} | ${entry.perZone ? 'per zone' : 'node-wide'} | ${node} | ${cell(entry.spec.doc)} |`)
  }
  return out.join('\n') + '\n'
}

function cell (s: string): string {
  return s.replaceAll('|', '\\|').replaceAll('<', '&lt;').replaceAll('>', '&gt;')
}
