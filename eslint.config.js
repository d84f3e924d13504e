import js from '@eslint/js'
import tseslint from 'typescript-eslint'

/** Where aedes, aedes-persistence and mqtt-packet may be imported and aedes' fields read. */
const MQTT_CORE_OWNERS = ['node/mqtt/**', 'test/node/mqtt/**', 'bench/brokers/plain-aedes.ts']

const AEDES_IMPORTS = {
  group: ['aedes', 'aedes/*', 'aedes-*', 'aedes-*/*'],
  message: 'aedes and aedes-persistence are imported in node/mqtt/ only: use the typed MqttCore (broker.core, node/mqtt/core.ts).'
}
const MQTT_PACKET_IMPORTS = {
  group: ['mqtt-packet', 'mqtt-packet/*'],
  message: 'mqtt-packet is imported in node/mqtt/ only: decode frames with node/mqtt/frame-decoder.ts.'
}

/** Reaches into aedes (its instance, the fields it owns or we patch): node/mqtt/ only. */
const AEDES_FIELDS = [
  { selector: "MemberExpression[property.name='aedes']", message: 'broker.aedes is read in node/mqtt/ only: use broker.core (MqttCore, node/mqtt/core.ts).' },
  { selector: "MemberExpression[object.property.name='socket'][property.name='client']", message: 'the aedes client of a socket is read in node/mqtt/ only: use broker.core.client(id) or a wire\'s clientId.' },
  {
    selector: 'MemberExpression[property.name=/^(connectedClients|deliver0|deliverQoS|_serverKeepAlive|_notAuthorized|_disconnected|_assignedClientId|_keepaliveTimer)$/]',
    message: 'an aedes field, read in node/mqtt/ only: add what you need to MqttCore or ClientView (node/mqtt/core.ts).'
  }
]

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error'
    }
  },
  { files: ['bin/**', 'bench/**', 'test/**', 'scripts/**', '**/*.cjs'], rules: { 'no-console': 'off', '@typescript-eslint/no-require-imports': 'off' } },
  { files: ['**/*.cjs'], languageOptions: { globals: { module: 'writable', require: 'readonly' } } },
  // The MQTT core boundary (node/mqtt/core.ts): aedes, aedes-persistence and their fields are
  // node/mqtt/'s alone; everything else uses the typed MqttCore (`broker.core`). Allowed past
  // it: the core's own unit tests (test/node/mqtt/) and the plain-aedes baseline benchmark.
  {
    files: ['**/*.ts', '**/*.js'],
    ignores: MQTT_CORE_OWNERS,
    rules: {
      'no-restricted-imports': ['error', { patterns: [AEDES_IMPORTS] }],
      'no-restricted-syntax': ['error', ...AEDES_FIELDS]
    }
  },
  // mqtt-packet too, in product code (tests and benchmarks encode frames as a client would)
  {
    files: ['node/**', 'plugins/**', 'cluster/**', 'api/**', 'rules/**', 'bin/**'],
    ignores: MQTT_CORE_OWNERS,
    rules: { 'no-restricted-imports': ['error', { patterns: [AEDES_IMPORTS, MQTT_PACKET_IMPORTS] }] }
  }
)
