/** The node's embedded durable store: factory and types only. */
export { createStore, MAX_KEY_BYTES } from './store.js'
export type { Store, StoreTable, StoreInit } from './store.js'
export { STORE_FORMAT, STORE_MIGRATIONS, upgradeStoreFormat } from './format.js'
export type { StoreMigration, StoreFormatPlan } from './format.js'
