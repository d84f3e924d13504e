// Starling needs Node.js 22.13 or newer (package.json `engines`: the floor of its dependencies;
// CI and the Docker image run Node 24). `npm install` puts Node 24 in node_modules/.bin (the
// registry's `node` package), which npm scripts and npx use: `npm start`, `npx starling-ctl`.
const [major, minor] = process.versions.node.split('.').map(Number)
if (major < 22 || (major === 22 && minor < 13)) {
  const program = process.argv[1]?.split('/').pop() ?? 'starling'
  console.error(`${program}: Node.js ${process.version} is too old; Starling needs 22.13 or newer. ` +
    'Run it through npm (npm start, npx starling, npx starling-ctl) to use the Node.js 24 that npm install put in node_modules, or install Node.js 24.')
  process.exit(1)
}
