/** `GET /status`: EMQ X 4's health check, for load balancers and the container's HEALTHCHECK (docs/api.md). */

/** The body of `GET /status` (EMQ X 4's `Node <name> is started` / `<release> is running`). */
export function statusText (nodeName: string): string {
  return `Node ${nodeName} is started\nstarling is running`
}
