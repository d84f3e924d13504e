/** svc_delayed_publish (docs/plugins.md, "svc_delayed_publish"): `$delayed/<seconds>/<topic>` held in the store and published later. */
export {
  DELAYED_PREFIX, DELAYED_TABLE, DelayedPublisher, MAX_DELAY_SECONDS, parseDelayedTopic,
  type DelayedMessage, type DelayedPublisherInit, type DelayedTopic
} from './delayed-publisher.js'
export { DELAYED_CONFIG_SCHEMA, createDelayedPublishPlugin, delayedPublisherOf, type DelayedPublishPlugin } from './plugin.js'
