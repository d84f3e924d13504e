/**
 * The MQTT core boundary (issue 12): aedes, aedes-persistence and mqtt-packet are imported,
 * and aedes' fields read, in node/mqtt/ only; `npm run lint` (CI) fails a change that
 * reaches past it. ESLint runs in a child process on snippets placed at the paths named.
 */
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** The rule ids ESLint reports for each snippet, keyed by its path. */
function lint (snippets: Record<string, string>): Record<string, string[]> {
  const script = `
    import { ESLint } from 'eslint'
    const snippets = JSON.parse(process.argv[1])
    const eslint = new ESLint({ cwd: process.cwd() })
    const out = {}
    for (const [filePath, code] of Object.entries(snippets)) {
      const [result] = await eslint.lintText(code, { filePath })
      out[filePath] = result.messages.map(m => m.ruleId + ': ' + m.message)
    }
    process.stdout.write(JSON.stringify(out))
  `
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(snippets)], { cwd: root, encoding: 'utf8' })
  if (run.status !== 0) throw new Error(`eslint failed: ${run.stderr}`)
  return JSON.parse(run.stdout)
}

const REACHES = [
  "import { Aedes } from 'aedes'",
  "import MemoryPersistence from 'aedes-persistence/asyncPersistence.js'",
  'export const clients = (node: { broker: any }) => node.broker.aedes.clients',
  'export const client = (wire: { socket: any }) => wire.socket.client',
  'export const count = (aedes: any) => aedes.connectedClients',
  'export const keepAlive = (client: any) => client._serverKeepAlive'
].join('\n') + '\nexport const used = [Aedes, MemoryPersistence]\n'

describe('the MQTT core boundary lint rule', () => {
  let results: Record<string, string[]>
  beforeAll(() => {
    results = lint({
      'node/ops/boundary-probe.ts': REACHES + "import mqttPacket from 'mqtt-packet'\nexport const parse = mqttPacket\n",
      'cluster/boundary-probe.ts': 'export const id = (node: { broker: any }) => node.broker.aedes.id\n',
      'test/e2e/boundary-probe.test.ts': "import mqttPacket from 'mqtt-packet'\nexport const gone = (node: { broker: any }) => [node.broker.aedes.clients, mqttPacket]\n",
      'node/mqtt/boundary-probe.ts': REACHES,
      'node/ops/boundary-typed.ts': 'export const count = (node: { broker: { core: { clientCount: number } } }) => node.broker.core.clientCount\n'
    })
  }, 60000)

  it('fails an import of aedes, aedes-persistence or mqtt-packet and every read of an aedes field outside node/mqtt/', () => {
    const found = results['node/ops/boundary-probe.ts']
    expect(found.filter(m => m.startsWith('no-restricted-imports'))).toHaveLength(3)
    expect(found.filter(m => m.startsWith('no-restricted-syntax'))).toHaveLength(4)
    expect(found.join('\n')).toContain('broker.core')
    expect(results['cluster/boundary-probe.ts']).toEqual([expect.stringContaining('broker.aedes is read in node/mqtt/ only')])
  })

  it('lets tests encode frames with mqtt-packet but not read broker.aedes', () => {
    expect(results['test/e2e/boundary-probe.test.ts']).toEqual([expect.stringMatching(/^no-restricted-syntax: broker\.aedes/)])
  })

  it('lets node/mqtt/ and code using the typed core through', () => {
    expect(results['node/mqtt/boundary-probe.ts']).toEqual([])
    expect(results['node/ops/boundary-typed.ts']).toEqual([])
  })
})
