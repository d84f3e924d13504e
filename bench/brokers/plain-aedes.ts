/**
 * The baseline broker: aedes 2 with its in-memory persistence and nothing else, on one
 * TCP port. Usage: `node dist/bench/brokers/plain-aedes.js <port> [host]`.
 * Starling's numbers are read against this to see what our additions cost.
 */
import net from 'node:net'
import { Aedes } from 'aedes'

const port = Number(process.argv[2] ?? 1883)
const host = process.argv[3] ?? '127.0.0.1'

const broker = await Aedes.createBroker()
const server = net.createServer(broker.handle)
server.listen(port, host)

function shutdown (): void {
  server.close()
  broker.close(() => process.exit(0))
}
process.on('SIGTERM', shutdown)
process.on('SIGINT', shutdown)
