/**
 * The harness's servers for data integration (InfluxDB 1.x, RabbitMQ, DynamoDB, ClickHouse) against
 * themselves: each is started once, takes a write its own client reads back, keeps it across a
 * SIGKILL and a restart on the same ports, and `close()` leaves no process and no directory.
 */
import { createSocket } from 'node:dgram'
import { existsSync } from 'node:fs'
import { closeAndCheck, downAndBack } from './checks.js'
import {
  describeWithServer, startClickhouse, startDynamodb, startInfluxdb, startRabbitmq,
  type ClickhouseServer, type DynamodbServer, type InfluxdbServer, type RabbitmqServer
} from './index.js'

/** Polls `read` until `done` holds of what it returned (a UDP write lands in a later batch). */
async function eventually<T> (read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await read()
    if (done(value) || Date.now() > deadline) return value
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

describeWithServer('influxdb', 'InfluxDB 1.x', () => {
  let influx: InfluxdbServer
  beforeAll(async () => { influx = await startInfluxdb({ user: 'admin', password: 'influx-secret' }) })
  afterAll(async () => { if (influx !== undefined) await closeAndCheck(influx) })

  it('takes points over HTTP /write and UDP and answers queries with them', async () => {
    console.log(`InfluxDB started in ${influx.startedInMs} ms`)
    await influx.write('temperature,clientid=c1 value=21.5 1700000000000000000\ntemperature,clientid=c2 value=22 1700000001000000000')
    expect(await influx.query('SELECT value FROM temperature WHERE clientid = \'c1\'', { epoch: 's' }))
      .toEqual([{ name: 'temperature', columns: ['time', 'value'], values: [[1700000000, 21.5]] }])
    const udp = createSocket('udp4')
    try {
      await new Promise<void>((resolve, reject) => udp.send('humidity,clientid=c1 value=40 1700000002000000000', influx.udpPort, influx.host, (err) => err ? reject(err) : resolve()))
    } finally {
      udp.close()
    }
    const series = await eventually(async () => await influx.query('SELECT value FROM humidity', { epoch: 's' }), (s) => s.length > 0)
    expect(series).toEqual([{ name: 'humidity', columns: ['time', 'value'], values: [[1700000002, 40]] }])
  })

  it('refuses requests without the admin\'s credentials', async () => {
    const response = await fetch(`${influx.url}/query?q=SHOW%20DATABASES`)
    expect(response.status).toBe(401)
    expect((await influx.query('SHOW DATABASES'))[0].values).toContainEqual([influx.database])
  })

  it('keeps its points across a SIGKILL, on the same ports', async () => {
    const ports = [...influx.ports]
    await downAndBack(influx, 'kill')
    expect(influx.ports).toEqual(ports)
    console.log(`InfluxDB restarted in ${influx.startedInMs} ms`)
    expect(await influx.query('SELECT count(value) FROM temperature')).toMatchObject([{ values: [[expect.anything(), 2]] }])
    expect(await influx.query('SELECT count(value) FROM humidity')).toMatchObject([{ values: [[expect.anything(), 1]] }])
  })
})

describeWithServer('rabbitmq', 'RabbitMQ', () => {
  let rabbit: RabbitmqServer
  beforeAll(async () => { rabbit = await startRabbitmq() }, 60_000)
  afterAll(async () => {
    if (rabbit === undefined) return
    await closeAndCheck(rabbit, [rabbit.epmd.pid as number])
    expect(existsSync(rabbit.epmd.dir)).toBe(false)
  })

  it('routes a confirmed persistent message through an exchange to a durable queue', async () => {
    console.log(`RabbitMQ (and its epmd) started in ${rabbit.startedInMs + rabbit.epmd.startedInMs} ms`)
    const connection = await rabbit.connect()
    try {
      const channel = await connection.createConfirmChannel()
      await channel.assertExchange('mqtt', 'topic', { durable: true })
      await channel.assertQueue('telemetry', { durable: true })
      await channel.bindQueue('telemetry', 'mqtt', 'sensors.#')
      for (const n of [1, 2]) channel.publish('mqtt', 'sensors.c1', Buffer.from(`reading ${n}`), { persistent: true })
      await channel.waitForConfirms()
      const first = await channel.get('telemetry')
      expect(first !== false && first.content.toString()).toBe('reading 1')
      // requeued: the restart below must find both
      if (first !== false) channel.nack(first, false, true)
      await channel.close()
    } finally {
      await connection.close()
    }
  })

  it('keeps confirmed persistent messages across a SIGKILL, on the same ports, with the same epmd', async () => {
    const epmdPid = rabbit.epmd.pid
    await downAndBack(rabbit, 'kill')
    console.log(`RabbitMQ restarted after SIGKILL in ${rabbit.startedInMs} ms`)
    expect(rabbit.epmd.pid).toBe(epmdPid)
    const connection = await rabbit.connect()
    try {
      const channel = await connection.createChannel()
      expect((await channel.checkQueue('telemetry')).messageCount).toBe(2)
      const got: string[] = []
      for (let m = await channel.get('telemetry', { noAck: true }); m !== false; m = await channel.get('telemetry', { noAck: true })) got.push(m.content.toString())
      expect(got).toEqual(['reading 1', 'reading 2'])
      await channel.close()
    } finally {
      await connection.close()
    }
  }, 60_000)

  it('refuses a wrong password', async () => {
    const { default: amqp } = await import('amqplib')
    await expect(amqp.connect(rabbit.url.replace(':guest@', ':wrong@'))).rejects.toThrow(/ACCESS_REFUSED|403/)
  })
})

describeWithServer('dynamodb', 'DynamoDB (dynalite)', () => {
  let dynamo: DynamodbServer
  beforeAll(async () => { dynamo = await startDynamodb() })
  afterAll(async () => { if (dynamo !== undefined) await closeAndCheck(dynamo) })

  it('creates a table, puts an item and gets it back', async () => {
    console.log(`DynamoDB (dynalite) started in ${dynamo.startedInMs} ms`)
    await dynamo.createTable({
      TableName: 'mqtt_msg',
      AttributeDefinitions: [{ AttributeName: 'msgid', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'msgid', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST'
    })
    await dynamo.call('PutItem', { TableName: 'mqtt_msg', Item: { msgid: { S: 'm1' }, topic: { S: 't/1' }, qos: { N: '1' } } })
    expect(await dynamo.call('GetItem', { TableName: 'mqtt_msg', Key: { msgid: { S: 'm1' } } }))
      .toEqual({ Item: { msgid: { S: 'm1' }, topic: { S: 't/1' }, qos: { N: '1' } } })
    await expect(dynamo.call('GetItem', { TableName: 'nope', Key: { msgid: { S: 'm1' } } })).rejects.toThrow(/ResourceNotFoundException/)
  })

  it('keeps its tables and items across a SIGKILL, on the same port', async () => {
    await downAndBack(dynamo, 'kill')
    expect(await dynamo.call('ListTables')).toEqual({ TableNames: ['mqtt_msg'] })
    expect((await dynamo.call('GetItem', { TableName: 'mqtt_msg', Key: { msgid: { S: 'm1' } } })).Item?.topic).toEqual({ S: 't/1' })
  })
})

describeWithServer('clickhouse', 'ClickHouse 18.16 with @clickhouse/client', () => {
  let ch: ClickhouseServer
  beforeAll(async () => { ch = await startClickhouse() })
  afterAll(async () => { if (ch !== undefined) await closeAndCheck(ch) })

  it('inserts rows in JSONEachRow and selects them, as the test user on its database', async () => {
    console.log(`ClickHouse started in ${ch.startedInMs} ms`)
    await ch.query('CREATE TABLE mqtt_msg (ts DateTime, clientid String, qos UInt8, payload String) ENGINE = MergeTree() ORDER BY ts')
    await ch.insert('mqtt_msg', [
      { ts: '2026-11-27 10:00:00', clientid: 'c1', qos: 1, payload: '{"t":21.5}' },
      { ts: '2026-11-27 10:00:01', clientid: 'c2', qos: 0, payload: 'x' }
    ])
    expect(await ch.query('SELECT clientid, qos, payload FROM mqtt_msg ORDER BY ts'))
      .toEqual([{ clientid: 'c1', qos: 1, payload: '{"t":21.5}' }, { clientid: 'c2', qos: 0, payload: 'x' }])
    const { ClickHouseLogLevel, createClient } = await import('@clickhouse/client')
    const wrong = createClient({ url: ch.url, username: ch.user, password: 'wrong', log: { level: ClickHouseLogLevel.OFF } })
    try {
      await expect(wrong.query({ query: 'SELECT 1' })).rejects.toThrow(/Wrong password/)
    } finally {
      await wrong.close()
    }
  })

  it('refuses server-side query parameters, which 18.16 predates: values go in the rows', async () => {
    const client = ch.client()
    try {
      await expect(client.query({ query: 'SELECT {id:UInt32} AS id', query_params: { id: 1 } })).rejects.toThrow(/Unknown setting param_id/)
    } finally {
      await client.close()
    }
  })

  it('keeps its rows across a SIGKILL, on the same ports', async () => {
    await downAndBack(ch, 'kill')
    console.log(`ClickHouse restarted after SIGKILL in ${ch.startedInMs} ms`)
    expect(await ch.query('SELECT count() AS n FROM mqtt_msg')).toEqual([{ n: '2' }])
  })
})
