/** The node's embedded durable store: factory and types only. */
export { createStore, MAX_KEY_BYTES } from './store.js'
export type { Store, StoreTable, StoreInit } from './store.js'
