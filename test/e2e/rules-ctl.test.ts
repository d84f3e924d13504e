/**
 * `starling-ctl rules | rule-actions | resources | resource-types` through runCtl (in
 * process) against a node: the spec's CLI table, EMQ X 4's output lines, the new ids
 * printed by create, exit 1 with a clear message on bad input (and no change).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestNode, connect, closeClients, collect, waitFor, type TestNode } from '../helpers/node.js'
import { runCtlOn } from '../helpers/ctl.js'

let node: TestNode
let cwd: string
beforeAll(async () => {
  // svc_bridge_mqtt loaded: the listings below include the bridge types it provides
  node = await startTestNode({ 'broker.sys_interval': '0' }, undefined, { plugins: ['svc_bridge_mqtt'] })
  cwd = mkdtempSync(join(tmpdir(), 'starling-ctl-cwd-'))
})
afterAll(async () => {
  await closeClients()
  await node.destroy()
  rmSync(cwd, { recursive: true, force: true })
})

async function ctl (...argv: string[]): Promise<{ code: number, out: string, err: string }> {
  return await runCtlOn(node, argv, { cwd })
}

describe('starling-ctl resource-types and rule-actions', () => {
  it('lists and shows resource types', async () => {
    const list = await ctl('resource-types', 'list')
    expect(list).toEqual({
      code: 0,
      err: '',
      out: "resource_type(name='built_in', provider='svc_rule_engine', title='Built-In Resource Type', description='The built in resource type for debug purpose')\n" +
        "resource_type(name='web_hook', provider='svc_rule_engine', title='WebHook', description='WebHook: sends the selected data as an HTTP request with a JSON body')\n" +
        "resource_type(name='bridge_mqtt', provider='svc_bridge_mqtt', title='MQTT Bridge', description='MQTT Message Bridge: sends what rules select to a remote MQTT broker (v3.1, 3.1.1, 5), buffered while it is away')\n" +
        "resource_type(name='bridge_rpc', provider='svc_bridge_mqtt', title='RPC Bridge', description='Starling RPC Bridge: sends what rules select to a node of another Starling cluster over the cluster transport, buffered while it is away')\n"
    })
    const show = await ctl('resource-types', 'show', 'web_hook')
    expect(show.out).toMatch(/^resource_type\(name='web_hook', provider='svc_rule_engine', title='WebHook', .*, params=\{"url":\{"type":"string","format":"url","required":true/)
    expect(await ctl('resource-types', 'show', 'nope')).toEqual({ code: 1, out: '', err: 'resource type nope not found; known types: built_in, web_hook, bridge_mqtt, bridge_rpc\n' })
  })

  it('lists actions, for an event type with -k, and shows one', async () => {
    const list = await ctl('rule-actions', 'list')
    expect(list.out.split('\n').filter(Boolean)).toHaveLength(7)
    expect(list.out).toContain("action(name='republish', app='svc_rule_engine', for='$any', types=[], title='Republish', description='Republish a MQTT message to another topic')\n")
    const connected = await ctl('rule-actions', 'list', '-k', 'client.connected')
    expect(connected.out).not.toContain('web_hook:publish_action')
    expect(connected.out.split('\n').filter(Boolean)).toHaveLength(5)
    const show = await ctl('rule-actions', 'show', 'built_in:inspect_action')
    expect(show.out).toMatch(/^action\(name='inspect', app='svc_rule_engine', for='\$any', types=\[\], title='Inspect \(debug\)', description='.*', params=\{\}\)\n$/)
    expect((await ctl('rule-actions', 'show', 'nope')).code).toBe(1)
  })
})

describe('starling-ctl resources and rules', () => {
  it('creates, lists, shows (with status) and deletes a resource', async () => {
    const created = await ctl('resources', 'create', 'web_hook', '-c', '{"url":"http://127.0.0.1:1/x"}', '-d', 'my hook')
    expect(created.code).toBe(0)
    const id = /^Resource (resource:[0-9a-f]{8}) created\n$/.exec(created.out)?.[1] as string
    expect(id).toBeDefined()
    const list = await ctl('resources', 'list', '-t', 'web_hook')
    expect(list.out).toBe(`resource(id='${id}', type='web_hook', config={"url":"http://127.0.0.1:1/x","connect_timeout":"5s","request_timeout":"5s","pool_size":8,"enable_pipelining":true,"cacertfile":"","certfile":"","keyfile":"","verify":false,"server_name_indication":"","tls_version":""}, description='my hook')\n`)
    expect((await ctl('resources', 'list', '-t', 'built_in')).out).toBe('')
    const show = await ctl('resources', 'show', id)
    expect(show.out).toContain(`, status=[{"node":"${node.name}","is_alive":false}], description='my hook')`)
    // EMQ X 4.4's resources update: a new config and/or description
    expect(await ctl('resources', 'update', id, '-c', '{"url":"http://127.0.0.1:2/y"}', '-d', 'moved')).toEqual({ code: 0, out: 'Resource update successfully\n', err: '' })
    expect(node.rules.resources.get(id)).toMatchObject({ config: { url: 'http://127.0.0.1:2/y' }, description: 'moved' })
    expect((await ctl('resources', 'update', id, '-c', '{"url":7}')).err).toMatch(/parameter url/)
    expect((await ctl('resources', 'update', 'nope', '-d', 'x')).err).toBe('resource nope not found\n')
    expect(await ctl('resources', 'delete', id)).toEqual({ code: 0, out: 'ok\n', err: '' })
    expect((await ctl('resources', 'list')).out).toBe('')
  })

  it('tests a resource without creating it (EMQ X 4.4\'s resources test)', async () => {
    expect(await ctl('resources', 'test', 'web_hook', '-c', '{"url":"http://127.0.0.1:1/x"}')).toEqual({ code: 0, out: 'Test creating resource successfully (dry-run)\n', err: '' })
    expect((await ctl('resources', 'test', 'web_hook')).err).toMatch(/^resource type web_hook config: missing parameter url/)
    expect(node.rules.resources.list()).toEqual([])
  })

  it('refuses bad resources with the reason, changing nothing', async () => {
    expect(await ctl('resources', 'create', 'web_hook')).toEqual({ code: 1, out: '', err: 'resource type web_hook config: missing parameter url (The URL of the server (http:// or https://))\n' })
    expect((await ctl('resources', 'create', 'web_hook', '-c', '{url:')).err).toMatch(/^-c is not JSON: /)
    expect((await ctl('resources', 'create', 'nope')).err).toMatch(/^unknown resource type nope/)
    expect((await ctl('resources', 'show', 'nope')).err).toBe('resource nope not found\n')
    expect(node.rules.resources.list()).toEqual([])
  })

  it('creates a rule (printing its id), lists, shows, updates and deletes it; the rule runs', async () => {
    const created = await ctl('rules', 'create', 'SELECT payload FROM "ctl/in"', '[{"name":"republish","params":{"target_topic":"ctl/out"}}]', '-d', 'from the CLI')
    expect(created.err).toBe('')
    const id = /^Rule (rule:[0-9a-f]{8}) created\n$/.exec(created.out)?.[1] as string
    expect(id).toBeDefined()
    const sub = await connect(node, { clientId: 'ctl-sub' })
    await sub.subscribeAsync('ctl/out')
    const got = collect(sub)
    const pub = await connect(node, { clientId: 'ctl-pub' })
    await pub.publishAsync('ctl/in', 'via cli')
    await waitFor(() => got.length === 1, 'the republished message')

    const show = await ctl('rules', 'show', id)
    const actionId = node.rules.rules.get(id).actions[0].id
    await waitFor(() => node.rules.actionMetrics(actionId).success === 1, 'the action counted')
    expect((await ctl('rules', 'show', id)).out).toBe(
      `rule(id='${id}', for='message.publish', rawsql='SELECT payload FROM "ctl/in"', ` +
      `actions=[{"id":"${actionId}","name":"republish","params":{"target_topic":"ctl/out","target_qos":0,"target_retain":false,"payload_tmpl":"\${payload}"},"metrics":[{"node":"${node.name}","taken":1,"success":1,"failed":0}],"fallbacks":[]}], ` +
      `on_action_failed='continue', metrics=[{"node":"${node.name}","matched":1,"speed":0,"speed_max":0,"speed_last5m":0,"failed":0}], enabled='true', description='from the CLI')\n`)
    expect(show.code).toBe(0)
    expect((await ctl('rules', 'list')).out).toContain(`rule(id='${id}'`)
    expect(JSON.parse((await ctl('rules', 'show', id, '--json')).out)).toMatchObject({ id, enabled: true })

    expect(await ctl('rules', 'update', id, '-e', 'false', '-d', 'off')).toEqual({ code: 0, out: `Rule ${id} updated\n`, err: '' })
    expect(node.rules.rules.get(id)).toMatchObject({ enabled: false, description: 'off' })
    expect((await ctl('rules', 'update', id, '-s', 'SELECT * FROM "client.connected"', '-a', '[{"name":"do_nothing"}]')).code).toBe(0)
    expect(node.rules.rules.get(id)).toMatchObject({ for: 'client.connected', actions: [{ name: 'do_nothing' }] })
    // EMQ X 4.4's -g and fallbacks
    expect((await ctl('rules', 'update', id, '-g', 'stop', '-a', '[{"name":"do_nothing","fallbacks":[{"name":"inspect"}]}]')).code).toBe(0)
    expect((await ctl('rules', 'show', id)).out).toMatch(/actions=\[\{"id":"do_nothing_\w+_0","name":"do_nothing","params":\{\},"metrics":\[.*\],"fallbacks":\[\{"id":"inspect_\w+_0_f_0","name":"inspect","params":\{\},"metrics":\[.*\],"fallbacks":\[\]\}\]\}\], on_action_failed='stop', /)
    expect(await ctl('rules', 'delete', id)).toEqual({ code: 0, out: 'ok\n', err: '' })
    expect((await ctl('rules', 'list')).out).toBe('')
  })

  it('refuses bad rules with the reason, changing nothing', async () => {
    expect((await ctl('rules', 'create', 'SELECT * FRM "t"', '[]')).err).toMatch(/^invalid SQL: /)
    expect((await ctl('rules', 'create', 'SELECT * FROM "t"', '[{"name":"nope"}]')).err).toMatch(/^unknown action nope; known actions: /)
    expect((await ctl('rules', 'create', 'SELECT * FROM "t"', 'not json')).err).toMatch(/^actions is not JSON: /)
    expect((await ctl('rules', 'create', 'SELECT * FROM "t"', '[]', '-e', 'maybe')).err).toBe('--enabled must be true or false, got maybe\n')
    expect((await ctl('rules', 'create', 'SELECT * FROM "t"', '[]', '-g', 'later')).err).toBe('parameter on_action_failed must be continue or stop, got "later"\n')
    expect(await ctl('rules', 'show', 'rule:nope')).toEqual({ code: 1, out: '', err: 'rule rule:nope not found\n' })
    expect((await ctl('rules', 'delete', 'rule:nope')).code).toBe(1)
    expect((await ctl('rules', 'update', 'rule:nope', '-e', 'true')).code).toBe(1)
    expect(node.rules.rules.list()).toEqual([])
  })
})
