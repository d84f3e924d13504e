/**
 * Errors of the control channel. `ControlError` and `NodeNotRunningError` are what
 * starling-ctl prints (listed in the node's error catalogue, `node/errors.ts`, as
 * starling-ctl-only kinds); the socket errors stop a node's start.
 */

/**
 * A command failed on the node, or the control channel could not deliver it. `code` is the
 * spec's API code (101-115) when the node's handler gave one.
 */
export class ControlError extends Error {
  readonly code?: number

  constructor (message: string, code?: number) {
    super(message)
    this.name = 'ControlError'
    if (code !== undefined) this.code = code
  }
}

/** No node answers on the control socket: the file is missing or nothing listens on it. */
export class NodeNotRunningError extends ControlError {
  constructor (nodeName: string, socketPath: string) {
    super(`Node ${nodeName} is not running (no control socket at ${socketPath}); start it with bin/starling`)
    this.name = 'NodeNotRunningError'
  }
}

/** Another process already serves the control socket this node wants to listen on. */
export class ControlSocketInUseError extends ControlError {
  constructor (socketPath: string) {
    super(`Another node is already listening on the control socket ${socketPath}; ` +
      'stop it first, or give this node its own node.data_dir')
    this.name = 'ControlSocketInUseError'
  }
}

/** The control socket path is longer than Unix domain sockets allow. */
export class ControlSocketPathTooLongError extends ControlError {
  constructor (socketPath: string, max: number) {
    super(`Control socket path ${socketPath} is ${Buffer.byteLength(socketPath)} bytes, more than ` +
      `the ${max} a Unix socket allows; set node.data_dir to a shorter path`)
    this.name = 'ControlSocketPathTooLongError'
  }
}
