/**
 * Types for aedes-persistence 10.3.1's in-memory persistence with the promise interface
 * that aedes 2 calls (the package ships no declaration at this path). Only what
 * `persistence.ts` uses.
 */
declare module 'aedes-persistence/asyncPersistence.js' {
  import type { Readable } from 'node:stream'

  /** The identity aedes passes for a client: a Client, or `{ id }` in a few places. */
  interface ClientRef { id: string }

  /** A persisted subscription, as returned by the topic trie. */
  interface TopicSubscription { clientId: string, topic: string, qos: number, rh?: number, rap?: boolean, nl?: boolean }

  class MemoryPersistence {
    constructor (opts?: { broadcastSubscriptions?: boolean })
    get broker (): any
    setup (broker: any): Promise<void>
    storeRetained (packet: any): Promise<void>
    createRetainedStream (pattern: string): Readable
    createRetainedStreamCombi (patterns: string[]): Readable
    addSubscriptions (client: ClientRef, subs: Array<Record<string, any>>): Promise<void>
    removeSubscriptions (client: ClientRef, topics: string[]): Promise<void>
    subscriptionsByClient (client: ClientRef): Promise<Array<{ topic: string, qos: number, rh?: number, rap?: boolean, nl?: boolean }>>
    countOffline (): Promise<{ subsCount: number, clientsCount: number }>
    subscriptionsByTopic (pattern: string): Promise<TopicSubscription[]>
    cleanSubscriptions (client: ClientRef): Promise<void>
    getClientList (topic: string): Readable
    // The outgoing, incoming and will methods exist too; persistence.ts replaces them all
    // (it keeps that state itself), so their shapes are left open here.
    outgoingEnqueue (sub: { clientId: string }, packet: any): Promise<void>
    outgoingEnqueueCombi (subs: Array<{ clientId: string }>, packet: any): Promise<void>
    outgoingUpdate (client: ClientRef, packet: any): Promise<void>
    outgoingClearMessageId (client: ClientRef, packet: any): Promise<any>
    outgoingStream (client: ClientRef): Readable
    incomingStorePacket (client: ClientRef, packet: any): Promise<void>
    incomingGetPacket (client: ClientRef, packet: any): Promise<any>
    incomingDelPacket (client: ClientRef, packet: any): Promise<void>
    putWill (client: ClientRef, packet: any): Promise<void>
    getWill (client: ClientRef): Promise<any>
    delWill (client: ClientRef): Promise<any>
    streamWill (brokers?: Record<string, unknown>): Readable
    destroy (): Promise<void>
  }

  export = MemoryPersistence
}

/** aedes-persistence's conformance suite, run by our tests against the store persistence. */
declare module 'aedes-persistence/abstract.js' {
  function abstractPersistence (opts: {
    test: (name: string, fn: (t: any) => Promise<void>) => void
    persistence: () => unknown
    testAsync?: boolean
  }): void
  export = abstractPersistence
}
