/** Traces of clients and topics to files, and the log level at run time, with their ctl commands. */
export { createTraceService, TraceError } from './trace-service.js'
export type { TraceService, TraceNode, TraceInfo, TraceType } from './trace-service.js'
export { createLogService } from './log-service.js'
export type { LogService, LogNode } from './log-service.js'
export { TRACE_CTL_COMMANDS, LOG_CTL_COMMANDS, registerTraceHandlers } from './trace-ctl.js'
export type { LogLevelResult } from './trace-ctl.js'
