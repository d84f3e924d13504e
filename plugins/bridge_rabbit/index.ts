/** svc_bridge_rabbit: the `bridge_rabbit` resource type and the `data_to_rabbit` action (docs/integrations.md). */
export { svcBridgeRabbit, BRIDGE_RABBIT, DATA_TO_RABBIT, RABBIT_PLUGIN } from './plugin.js'
export { compileRabbitAction, rabbitRow, type RabbitWrite } from './rabbit-client.js'
