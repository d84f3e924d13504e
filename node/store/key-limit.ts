// apart from the store so that code checking a key's length (the banned list's input checks,
// which starling-ctl loads) does not load lmdb
/**
 * The longest key, in UTF-8 bytes, a store table (store.ts) accepts. LMDB's compiled-in limit
 * (1978) less a margin for the key encoding's type byte. Callers that key by data they do
 * not control (topics, client ids) must shorten longer keys themselves, e.g. by hashing.
 */
export const MAX_KEY_BYTES = 1900
