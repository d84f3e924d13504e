/**
 * System topics and runtime monitoring: the `$SYS` publisher, sysmon warnings, the
 * metrics counted from frames (missed acknowledgements) and from drop reasons.
 */
export { createSysService, connectedPresence, disconnectedPresence } from './sys-publisher.js'
export type { SysService, SysServiceInit, SysNode, NodeService, ConnectedPresence, DisconnectedPresence } from './sys-publisher.js'
export { createSysmon, SYSMON_CHECK_MS, SYSMON_SUPPRESS_MS } from './sysmon.js'
export type { SysmonNode, LongGcWarning, LongScheduleWarning, LargeHeapWarning } from './sysmon.js'
export { SYSDESCR, formatUptime, formatDatetime } from './sys-info.js'
export { publishSys, sysTopicPrefix } from './sys-publish.js'
export { createMissedAcksTap } from './missed-acks.js'
export { combineTaps, PACKET } from './packet-tap.js'
export type { PacketTap, TappedWire } from './packet-tap.js'
export { createDropMetrics, countDropReason, DROP_REASON_METRIC } from './drop-metrics.js'
