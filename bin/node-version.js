// Starling needs Node.js 22.13 or newer (package.json `engines`: the floor of its dependencies;
// CI, the Docker image and the release tarball run Node.js 24). A launcher run by a shell starts
// on the installation's own Node.js 24 (bin/runtime.sh); one given to an older `node`
// (`node bin/starling` on Debian 12's Node.js 20) hands itself over here to that same Node.js 24,
// node_modules/node/bin/node, which `npm install` brings: the user sees no difference. Only
// when that runtime is missing too does it say what to do.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const [major, minor] = process.versions.node.split('.').map(Number)
if (major < 22 || (major === 22 && minor < 13)) {
  const runtime = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url))
  const program = process.argv[1]?.split('/').pop() ?? 'starling'
  if (!existsSync(runtime)) {
    console.error(`${program}: Node.js ${process.version} is too old; Starling needs 22.13 or newer. ` +
      `Run \`npm install\` in ${fileURLToPath(new URL('..', import.meta.url))} (it brings Node.js 24 into node_modules/node), or install Node.js 24.`)
    process.exit(1)
  }
  const child = spawn(runtime, [...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' })
  // this process only relays: the signals a service manager or a terminal sends go to the node
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2']) {
    process.on(signal, () => { child.kill(signal) })
  }
  child.on('error', (err) => { console.error(`${program}: cannot run ${runtime}: ${err.message}`); process.exit(1) })
  child.on('exit', (code, signal) => {
    if (signal !== null) {
      process.removeAllListeners(signal)
      process.kill(process.pid, signal)
    }
    process.exit(code ?? 1)
  })
  // the launcher's own import of the program waits here for good; the child does the work
  await new Promise(() => {})
}
