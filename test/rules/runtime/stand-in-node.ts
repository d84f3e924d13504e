/**
 * A stand-in node for rule-runtime tests: a silent logger, a real hooks bus, and a broker
 * core whose publish does nothing and whose holdPublish hands out real holds, kept in `holds`.
 */
import { pino, type Logger } from 'pino'
import { HooksBus } from '../../../node/hooks.js'
import type { StarlingNode } from '../../../node/node.js'
import { PublishHold } from '../../../node/mqtt/publish-hold.js'

export interface StandInNode {
  logger: Logger
  hooks: HooksBus
  holds: PublishHold[]
  node: StarlingNode
}

export function standInNode (): StandInNode {
  const logger = pino({ level: 'silent' })
  const hooks = new HooksBus(logger)
  const holds: PublishHold[] = []
  const holdPublish = (): PublishHold => { const hold = new PublishHold(); holds.push(hold); return hold }
  const node = { name: 'n1@127.0.0.1', logger, hooks, broker: { core: { publish: async () => {}, holdPublish } } } as unknown as StarlingNode
  return { logger, hooks, holds, node }
}
