/** Alarms: the registry (present, history, $SYS notices) and the OS monitor that raises them. */
export { createAlarms, ALARM_LEVELS, ALARM_HISTORY_LIMIT, ALARM_HISTORY_TABLE } from './alarms.js'
export type { Alarms, AlarmsNode, PresentAlarm, AlarmHistoryEntry } from './alarms.js'
export { createOsMonitor } from './os-monitor.js'
export type { OsMonitor, OsMonitorNode, OsMonitorConfig } from './os-monitor.js'
export { systemProbes } from './os-probes.js'
export type { OsProbes, CpuTimes } from './os-probes.js'
