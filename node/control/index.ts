/**
 * The control channel between `starling-ctl` and a node: the node's control server, the
 * client, the wire protocol, the command table and the output formatters.
 */
export { createControlServer } from './server.js'
export type { ControlServer, ControlServerInit, ControlHandler, ControlHandlers, ControlHandlerRequest } from './server.js'
export { callControl, DEFAULT_CONTROL_TIMEOUT_MS } from './client.js'
export type { CallControlOptions } from './client.js'
export { CONTROL_SOCKET_NAME, controlSocketPath } from './protocol.js'
export type { ControlRequest, ControlResponse, ControlErrorBody, ControlOptions } from './protocol.js'
export { ControlError, NodeNotRunningError, ControlSocketInUseError, ControlSocketPathTooLongError } from './errors.js'
export { CTL_COMMANDS, defineCommand, commandName, commandUsage, argumentsError, statusCommand, listenersCommand } from './commands.js'
export type { CtlCommand, CtlArgument, CtlOption, CtlInvocation, ArgumentsError, StatusResult, ListenerInfo } from './commands.js'
export { formatTable, formatFields, formatTerm, formatJson } from './format.js'
export type { TableColumn, FormatTableOptions, FormatFieldsOptions } from './format.js'
export { runCtl } from './ctl-program.js'
export type { CtlIo } from './ctl-program.js'
