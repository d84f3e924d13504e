/** The bridges (issue 15, docs/bridges.md): svc_bridge_mqtt, its config, the bridge runtime and the MQTT link. */
export * from './types.js'
export { BRIDGE_CONFIG_SCHEMA, BRIDGE_CONF_FILE, BRIDGE_PLUGIN, SUBSCRIPTION_SLOTS, badFilter, expandMountpoint, hostPort, parseBridgeConfigs, type ParseBridgeOptions } from './config.js'
export { BRIDGES_TABLE, bufferAlarmId, createBridge, decodeItem, encodeItem, type BridgeChanges, type BridgeComponents, type BridgeLinkSource } from './bridge.js'
export { createMqttLink, keptProperties, mqttClientOptions, type MqttLinkOptions } from './mqtt-link.js'
export { BRIDGE_OPERATIONS, Bridges, registerBridgeOperations, svcBridgeMqtt } from './plugin.js'
