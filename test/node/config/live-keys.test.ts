/**
 * The `live` column of docs/configuration.md (the schema's `live` flag) must say what a
 * running node really does: a key is live exactly when the configs API applies it at run time
 * (node/ops/config-live.ts); every other key is answered `restart_required`.
 */
import { CONFIG_SCHEMA } from '../../../node/config/schema.js'
import { isAppliedLive } from '../../../node/ops/config-live.js'

it('marks a key live in the schema (and the docs) exactly when a running node applies it', () => {
  const wrong = Object.entries(CONFIG_SCHEMA)
    .filter(([key, spec]) => spec.live !== isAppliedLive(key))
    .map(([key, spec]) => `${key}: schema says ${spec.live ? 'live' : 'restart'}, the node ${isAppliedLive(key) ? 'applies it live' : 'needs a restart'}`)
  expect(wrong).toEqual([])
})
