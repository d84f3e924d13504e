/** svc_retainer (docs/plugins.md, "svc_retainer"): the retained-message policy around the aedes persistence. */
export { Retainer, type RetainerInit, type RetainerPolicy, type RetainerStorage, type RetainedPersistence } from './retainer.js'
export { RETAINER_CONFIG_SCHEMA, retainerOf, createRetainerPlugin, retainerPolicyFrom, type RetainerPlugin } from './plugin.js'
