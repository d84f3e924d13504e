/**
 * node/http-listener.ts `lazyRequestListener`: the application behind a listener is built at
 * the first request, once, whatever arrives while it is being built; a build that fails answers
 * that request with the error envelope and is tried again at the next.
 */
import http from 'node:http'
import { lazyRequestListener, startHttpListeners, type HttpListeners } from '../../../node/http-listener.js'
import { parseAddress, type ListenerAddress } from '../../../node/config/value-types.js'

let listeners: HttpListeners | undefined

afterEach(async () => {
  await listeners?.stop()
  listeners = undefined
})

async function serve (app: http.RequestListener): Promise<number> {
  listeners = await startHttpListeners(app, { http: { address: parseAddress('127.0.0.1:0') as ListenerAddress, key: 'test.listener' } })
  return listeners.port as number
}

it('builds nothing until the first request, then builds once for requests that arrive together', async () => {
  let builds = 0
  const port = await serve(lazyRequestListener(async () => {
    builds++
    await new Promise((resolve) => setImmediate(resolve))
    return (req, res) => { res.end(`hello ${String(req.url)}`) }
  }))
  expect(builds).toBe(0)
  const answers = await Promise.all(['/a', '/b', '/c'].map(async (path) => await (await fetch(`http://127.0.0.1:${port}${path}`)).text()))
  expect(answers).toEqual(['hello /a', 'hello /b', 'hello /c'])
  expect(await (await fetch(`http://127.0.0.1:${port}/d`)).text()).toBe('hello /d')
  expect(builds).toBe(1)
})

it('answers 500 with the error envelope when the build fails, and builds again at the next request', async () => {
  let builds = 0
  const port = await serve(lazyRequestListener(async () => {
    if (++builds === 1) throw new Error('no module')
    return (_req, res) => { res.end('up') }
  }))
  const failed = await fetch(`http://127.0.0.1:${port}/`)
  expect(failed.status).toBe(500)
  expect(await failed.json()).toEqual({ code: 102, message: 'the HTTP application could not start: no module' })
  expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('up')
  expect(builds).toBe(2)
})

