/**
 * The verified claims of each client `svc_auth_jwt` let in, kept for that client's ACL
 * checks (EMQ X 4.4 kept them in the channel's `jwt_claims`): set when the plugin allows
 * a CONNECT, dropped when that connection goes.
 *
 * Invariants:
 * - An entry belongs to the connection that authenticated with it: it is set before the
 *   connection is accepted (`at` <= that connection's `connected_at`), and a disconnect
 *   drops it only when `at <= connected_at` of the connection that went. So when a client
 *   id is taken over, the old connection's late `client.disconnected` never drops the new
 *   connection's claims (set after the old one connected).
 * - An ACL check uses an entry only when the username matches too, and a CONNECT the
 *   plugin did not allow drops the client id's entry: claims never pass to a client that
 *   did not present the token.
 * - Memory: one entry per connected client the plugin allowed (plus, at worst, one per
 *   client id whose accepted CONNECT never became a connection, replaced at its next CONNECT).
 */

/** One client's claims. */
interface Entry {
  username: string | undefined
  claims: Readonly<Record<string, unknown>>
  /** When the CONNECT was allowed, ms since the epoch. */
  at: number
}

/** Claims by client id. */
export class JwtClaimsStore {
  private readonly byClient = new Map<string, Entry>()

  /** Keeps the claims of a CONNECT just allowed. */
  set (clientId: string, username: string | undefined, claims: Readonly<Record<string, unknown>>, now = Date.now()): void {
    this.byClient.set(clientId, { username, claims, at: now })
  }

  /** Drops a client id's claims (its CONNECT was not allowed by this plugin). */
  drop (clientId: string): void {
    this.byClient.delete(clientId)
  }

  /** The claims for an ACL check of this client, if this plugin let it in. */
  forAcl (clientId: string, username: string | undefined): Readonly<Record<string, unknown>> | undefined {
    const entry = this.byClient.get(clientId)
    return entry !== undefined && entry.username === username ? entry.claims : undefined
  }

  /** A connection of `clientId` that connected at `connectedAt` went away. */
  disconnected (clientId: string, connectedAt: number): void {
    const entry = this.byClient.get(clientId)
    if (entry !== undefined && entry.at <= connectedAt) this.byClient.delete(clientId)
  }

  get size (): number { return this.byClient.size }

  clear (): void { this.byClient.clear() }
}
