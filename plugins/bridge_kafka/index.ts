/** svc_bridge_kafka: the `bridge_kafka` resource type and the `data_to_kafka` action (docs/integrations.md). */
export { svcBridgeKafka, BRIDGE_KAFKA, DATA_TO_KAFKA, KAFKA_PLUGIN, kafkaBrokersOf, kafkaBufferOf } from './plugin.js'
export { compileKafkaAction, kafkaRow, type KafkaWrite } from './message.js'
export { kafkaConfigOf, KAFKA_RESOURCE_PARAMS, type KafkaConfig } from './config.js'
