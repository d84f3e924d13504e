/**
 * A data resource's TLS options for its driver: the resource's TLS params
 * (rules/resource-tls.ts) with relative files read from the configuration's folder, built by
 * node/tls-options.ts. A file that cannot be read refuses the config (108) naming the key.
 */
import { isAbsolute, resolve } from 'node:path'
import type { ConnectionOptions } from 'node:tls'
import { WrongTypeError } from '../../../node/errors.js'
import { configRoot } from '../../../node/config/index.js'
import { buildTlsOptions, type ServerNameRule } from '../../../node/tls-options.js'
import { resourceTls } from '../../../rules/resource-tls.js'
import type { ResourceComponents } from '../../../rules/types.js'

/** What {@link dataTlsOptions} needs beside the config. */
export interface DataTlsContext {
  /** The resource type, for the error message. */
  type: string
  /** How `server_name_indication` is read (node/tls-options.ts). */
  rule: ServerNameRule
  /** The host connected to (with `check-name`). */
  host?: string
  /** For a type without an `ssl` switch: whether TLS is on (an https URL). */
  https?: boolean
}

/** Node's TLS options of a resource's `config`, or undefined when it does not use TLS. */
export function dataTlsOptions (config: Record<string, unknown>, components: Pick<ResourceComponents, 'config'>, context: DataTlsContext): ConnectionOptions | undefined {
  const tls = resourceTls(config, context.https)
  if (tls === undefined) return undefined
  const root = configRoot(components.config)
  const file = (path: string | undefined): string | undefined => path === undefined ? undefined : isAbsolute(path) ? path : resolve(root, path)
  return buildTlsOptions({ ...tls, cacertfile: file(tls.cacertfile), certfile: file(tls.certfile), keyfile: file(tls.keyfile) }, {
    rule: context.rule,
    host: context.host,
    unreadable: (key, path, err) => {
      throw new WrongTypeError(`resource type ${context.type} config: parameter ${key} names a file that cannot be read (${path}: ${(err as NodeJS.ErrnoException).code ?? err.message})`)
    }
  })
}
