import mqttPacket from 'mqtt-packet'
import type { BrokerSettings } from './settings.js'

/**
 * Returns a function that rewrites a successful MQTT 5 CONNACK frame with the capabilities
 * aedes cannot advertise [MQTT-3.2.2-9..3.2.2-13]: shared subscriptions (aedes always says
 * unavailable), wildcard subscriptions, retain, and the maximum QoS. Called once per v5
 * connection by the wire layer, on the bytes aedes wrote.
 */
export function createConnackRewriter (settings: BrokerSettings): (frame: Buffer) => Buffer {
  return function rewriteConnack (frame: Buffer): Buffer {
    let connack: any = null
    const parser = mqttPacket.parser({ protocolVersion: 5 })
    parser.on('packet', (p: any) => { connack = p })
    parser.parse(frame)
    if (connack === null || connack.reasonCode !== 0) return frame
    const properties = connack.properties ?? {}
    properties.sharedSubscriptionAvailable = settings.sharedSubscription
    if (!settings.wildcardSubscription) properties.wildcardSubscriptionAvailable = false
    if (!settings.retainAvailable) properties.retainAvailable = false
    if (settings.maxQos < 2) properties.maximumQoS = settings.maxQos
    connack.properties = properties
    return mqttPacket.generate(connack, { protocolVersion: 5 })
  }
}
