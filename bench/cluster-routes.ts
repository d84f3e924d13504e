/**
 * The cluster bench's route timings (issue 5, Speed): how long new subscriptions on one
 * node take to become routes on another, and how long a node that joins takes to learn a
 * peer's routes. Both are timed end to end with real clients: a message published on the
 * other node to the last topic subscribed arrives. Route deltas travel in order on one
 * link and a join's snapshot is one frame, so the last route arriving means all did.
 */
import { joinCluster, runCtl, startClusterNode, type ClusterNode, type ClusterNodeOptions } from './cluster-nodes.js'
import { ProbeClient, publishUntilReceived } from './cluster-probe.js'

/** How often the publisher repeats its probe message: the resolution of both timings. */
export const PROBE_EVERY_MS = 20

/** Route propagation: one client on `sub` subscribes to `routes` new topics. */
export interface PropagationResult {
  round: number
  routes: number
  /** Most SUBSCRIBEs awaiting their SUBACK (Infinity: all written at once). */
  window: number
  /** From the first SUBSCRIBE written to the last SUBACK (the subscribing node's own work), ms. */
  subackMs: number
  /** From the first SUBSCRIBE written until a message published on the other node to the last topic arrived, ms. */
  routedMs: number
}

/**
 * Subscribes one client on `sub` to `routes` distinct topics, `perPacket` filters per
 * SUBSCRIBE and at most `window` SUBSCRIBEs unanswered, while a client on `pub` publishes
 * to the last topic every {@link PROBE_EVERY_MS}.
 */
export async function runPropagation (
  pub: ClusterNode, sub: ClusterNode, routes: number, perPacket: number, window: number, round: number
): Promise<PropagationResult> {
  const filters = Array.from({ length: routes }, (_, i) => `prop/r${round}w${window}/${i}`)
  const last = filters[filters.length - 1]
  const receiver = await ProbeClient.open(sub.port, `bench-prop-sub-${round}-${process.pid}`)
  const sender = await ProbeClient.open(pub.port, `bench-prop-pub-${round}-${process.pid}`)
  try {
    // the SUBSCRIBEs are written before subscribe() first awaits, so before the first probe
    const subscribed = receiver.subscribe(filters, perPacket, window)
    subscribed.catch(() => { /* awaited below */ })
    const arrived = await publishUntilReceived(sender, receiver, last, PROBE_EVERY_MS, 60_000)
    const timing = await subscribed
    return { round, routes, window, subackMs: timing.lastSubackAt - timing.firstSentAt, routedMs: arrived - timing.firstSentAt }
  } finally {
    await sender.close()
    await receiver.close()
  }
}

/**
 * SUBSCRIBEs each client of the join set-up keeps unanswered: the subscribing node's cost
 * grows with the square of unanswered SUBSCRIBEs (see docs/performance.md, Cluster), and
 * the set-up is not what the join measures.
 */
const SETUP_WINDOW = 4

/** A join: a fresh node joins a node whose clients hold `routes` subscriptions. */
export interface JoinResult {
  round: number
  routes: number
  /** Time to set up the subscriptions on the existing node (not a target; for context), ms. */
  setupMs: number
  /** Wall time of `starling-ctl cluster join` (a new Node.js process), ms. */
  joinCommandMs: number
  /** Wall time of `starling-ctl cluster status` on the same node: the tool's fixed cost, ms. */
  statusCommandMs: number
  /** From starting the join command until a message published on the joining node to the last topic arrived, ms. */
  routedMs: number
}

/**
 * Starts node `existing` with `clients` clients holding `routes` distinct subscriptions and
 * a fresh node `joiner`, then runs `cluster join` on the joiner while a client on it
 * publishes to the existing node's last topic every {@link PROBE_EVERY_MS}.
 */
export async function runJoin (
  repoRoot: string, routes: number, clients: number, perPacket: number, round: number, nodeOpts: ClusterNodeOptions
): Promise<JoinResult> {
  const nodes: ClusterNode[] = []
  const probes: ProbeClient[] = []
  try {
    const existing = await startClusterNode(repoRoot, `join-b${round}`, nodeOpts)
    nodes.push(existing)
    const joiner = await startClusterNode(repoRoot, `join-a${round}`, nodeOpts)
    nodes.push(joiner)
    const filters = Array.from({ length: routes }, (_, i) => `join/${i}`)
    const perClient = Math.ceil(routes / clients)
    const started = performance.now()
    for (let c = 0; c < clients; c++) probes.push(await ProbeClient.open(existing.port, `bench-join-sub${c}-${process.pid}`))
    await Promise.all(probes.map(async (client, c) => await client.subscribe(filters.slice(c * perClient, (c + 1) * perClient), perPacket, SETUP_WINDOW)))
    const setupMs = performance.now() - started
    const receiver = probes[probes.length - 1]
    const sender = await ProbeClient.open(joiner.port, `bench-join-pub-${process.pid}`)
    probes.push(sender)
    const statusCommandMs = (await runCtl(repoRoot, joiner, ['cluster', 'status'])).ms
    const t0 = performance.now()
    const arrived = publishUntilReceived(sender, receiver, filters[filters.length - 1], PROBE_EVERY_MS, 120_000)
    arrived.catch(() => { /* awaited below; a failed join must not leave it unhandled */ })
    const join = await joinCluster(repoRoot, joiner, existing)
    const routedMs = (await arrived) - t0
    return { round, routes, setupMs, joinCommandMs: join.ms, statusCommandMs, routedMs }
  } finally {
    await Promise.all(probes.map(async (p) => await p.close()))
    for (const node of nodes.reverse()) await node.stop()
  }
}
