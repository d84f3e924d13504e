/**
 * Will properties that a PUBLISH may carry (MQTT 5.0 §3.1.3.2 and §3.3.2.3): everything but
 * the Will Delay Interval (0x18), which is not a PUBLISH property: a packet carrying a property
 * not valid for its type is a Malformed Packet (§2.2.2.2), which strict clients drop.
 */
const PUBLISH_PROPERTIES = ['payloadFormatIndicator', 'messageExpiryInterval', 'contentType', 'responseTopic', 'correlationData', 'userProperties'] as const

/**
 * The PUBLISH of a will: the will packet with its properties mapped to PUBLISH properties.
 * The Will Delay Interval only times the publication (aedes arms the timer from the will
 * packet, at the earlier of the delay and the session's end [MQTT-3.1.3-9]).
 */
export function willPublish (will: Record<string, any>): Record<string, any> {
  const props: Record<string, unknown> | undefined = will.properties
  if (props === undefined || props === null) return will
  const properties: Record<string, unknown> = {}
  let any = false
  for (const key of PUBLISH_PROPERTIES) {
    if (props[key] !== undefined) { properties[key] = props[key]; any = true }
  }
  const publish = { ...will }
  if (any) publish.properties = properties
  else delete publish.properties
  return publish
}

/**
 * Makes aedes publish wills with PUBLISH properties only. aedes' `publishWill` is where every
 * will of a connection goes out (at once, after its delay, or at session end), so wrapping
 * that one method of this aedes instance covers them all.
 */
export function installWillPublish (aedes: any): void {
  const publishWill = aedes.publishWill.bind(aedes)
  aedes.publishWill = (client: any, will: Record<string, any>) => publishWill(client, willPublish(will))
}
