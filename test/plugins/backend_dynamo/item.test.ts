/**
 * data_to_dynamo's items (plugins/backend_dynamo/item.ts): selected values as DynamoDB
 * attributes, and puts cut into BatchWriteItem requests of at most 25 with no key twice.
 */
import { attributeOf, dynamoRow, requestsOf, compileDynamoAction } from '../../../plugins/backend_dynamo/index.js'

describe('data_to_dynamo items', () => {
  it('types each selected value as DynamoDB does: S, N, BOOL, NULL, M, L', () => {
    expect(attributeOf('x')).toEqual({ S: 'x' })
    expect(attributeOf(1.5)).toEqual({ N: '1.5' })
    expect(attributeOf(Number.NaN)).toEqual({ NULL: true })
    expect(attributeOf(false)).toEqual({ BOOL: false })
    expect(attributeOf(null)).toEqual({ NULL: true })
    expect(attributeOf({ a: [1, 'b', { c: true }] })).toEqual({ M: { a: { L: [{ N: '1' }, { S: 'b' }, { M: { c: { BOOL: true } } }] } } })
  })

  it('puts every selected field but absent ones into the item', () => {
    const action = compileDynamoAction({ table: 'mqtt_msg', hash_key: 'msgid', range_key: '' })
    expect(dynamoRow(action, { msgid: 'm1', qos: 1, gone: undefined })).toEqual({ t: 'mqtt_msg', k: ['msgid'], i: [{ a: { msgid: { S: 'm1' }, qos: { N: '1' } } }] })
  })

  it('cuts puts into requests of at most 25, starting a new one before a key seen in the current one', () => {
    const put = (id: string, row: number) => ({ table: 't', keys: ['id'], item: { a: { id: { S: id } } }, row })
    const sizes = requestsOf(Array.from({ length: 60 }, (_, i) => put(`k${i}`, i))).map((r) => r.length)
    expect(sizes).toEqual([25, 25, 10])
    const rows = requestsOf([put('a', 0), put('b', 1), put('a', 2), put('c', 3), put('a', 4)]).map((r) => r.map((p) => p.row))
    expect(rows).toEqual([[0, 1], [2, 3], [4]])
  })
})
