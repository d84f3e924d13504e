/**
 * libp2p 3 calls `Promise.withResolvers`, which Node 20 (our runtime) lacks. Imported for
 * its side effect before libp2p is used.
 */
interface WithResolvers { withResolvers?: () => unknown }

if (typeof (Promise as WithResolvers).withResolvers !== 'function') {
  (Promise as WithResolvers).withResolvers = function withResolvers () {
    let resolve: unknown
    let reject: unknown
    const promise = new Promise((res, rej) => { resolve = res; reject = rej })
    return { promise, resolve, reject }
  }
}

export {}
