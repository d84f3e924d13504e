/**
 * The error an ACL file that cannot be used raises. It lives here until the node's error
 * catalogue (`node/errors.ts`) exists; its name `AclFileError` and code are stable either way.
 */

/**
 * An ACL file (`acl_file`) that cannot be read or parsed. At start-up it stops the node; on
 * `acl reload` it is the command's error and the rules in force stay as they were. The
 * message is one line naming the file, the line and what was expected:
 *
 * `etc/acl.conf:3: expected allow or deny, got 'alow'`
 */
export class AclFileError extends Error {
  /** Stable machine-readable code, for the error catalogue. */
  readonly code = 'STARLING_ACL_INVALID'
  /** The file as shown in the message (relative to the working directory when inside it). */
  readonly file: string
  /** 1-based line of the offending term; undefined when the file itself cannot be read. */
  readonly line: number | undefined
  /** The message after the `file:line: ` prefix. */
  readonly detail: string

  constructor (file: string, line: number | undefined, detail: string) {
    super(`${file}${line === undefined ? '' : `:${line}`}: ${detail}`.replace(/[\r\n]+/g, ' '))
    this.name = 'AclFileError'
    this.file = file
    this.line = line
    this.detail = detail
  }
}
