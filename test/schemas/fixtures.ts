/** Schemas the registry suites share: a sensor reading and an alert, in avro and in protobuf. */
import avro from 'avsc'
import protobuf from 'protobufjs'

/** Avro: what a sensor publishes. */
export const SENSOR_AVSC = JSON.stringify({
  type: 'record',
  name: 'Sensor',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'temp', type: 'double' },
    { name: 'hum', type: 'int' }
  ]
}, null, 2)

/** Avro: what the rule republishes (a subset of the reading). */
export const ALERT_AVSC = JSON.stringify({
  type: 'record',
  name: 'Alert',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'temp', type: 'double' }
  ]
})

/** Protobuf: both messages in one file (the message type is the SQL's third argument). */
export const SENSOR_PROTO = `syntax = "proto3";

message Sensor {
  string id = 1;
  double temp = 2;
  int32 hum = 3;
}

message Alert {
  string id = 1;
  double temp = 2;
}
`

/** avsc types of the avro schemas, to encode what a test publishes and decode what it receives. */
export const avroSensor = avro.Type.forSchema(JSON.parse(SENSOR_AVSC))
export const avroAlert = avro.Type.forSchema(JSON.parse(ALERT_AVSC))

const root = protobuf.parse(SENSOR_PROTO, { keepCase: true }).root
/** protobufjs types of the .proto's messages. */
export const pbSensor = root.lookupType('Sensor')
export const pbAlert = root.lookupType('Alert')

/** A protobuf Sensor message as bytes. */
export function pbEncode (type: protobuf.Type, value: Record<string, unknown>): Buffer {
  return Buffer.from(type.encode(type.fromObject(value)).finish())
}

/** XOR with the key `k`: what the reference codec does with `3rd_party_opts` `xor:k`. */
export function xorK (data: Buffer | string): Buffer {
  const bytes = Buffer.isBuffer(data) ? data : Buffer.from(data)
  return Buffer.from(bytes.map(b => b ^ 0x6b))
}
