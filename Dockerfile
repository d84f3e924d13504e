## Starling node image: one node per container, running in the foreground.
## `docker compose up` (docker-compose.yml) starts a three-node cluster from it; see
## docs/cluster.md. The node is configured by STARLING_* environment variables
## (docs/configuration.md), e.g. STARLING_NODE__NAME, STARLING_NODE__COOKIE.
##
## `npm install`, not `npm ci`, as in .ci/run: lmdb and msgpackr list optional prebuilt
## packages for other platforms that our registry does not serve all of; npm ci refuses
## that, npm install skips them, and package-lock.json still pins everything else.

## ---- build: every dependency (TypeScript is a dev dependency), compile, then drop dev deps
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY node ./node
COPY plugins ./plugins
COPY cluster ./cluster
COPY api ./api
COPY rules ./rules
COPY bin ./bin
# the dashboard's web app (vite builds it into dist/dashboard/)
COPY dashboard ./dashboard
# bench/ is left out: the image runs nodes, not benchmarks (tsc builds what is there)
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund

## ---- runtime: production dependencies, dist/, the launchers in bin/, etc/
FROM node:24-bookworm-slim
# openssl: etc/certs/make-dev-certs.sh makes the development TLS certificate of the 8883 and
# 8084 listeners at first start when none is mounted (not for production: mount your own and
# set listener.ssl.external.keyfile/certfile/cacertfile)
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssl \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/starling
ENV NODE_ENV=production \
    STARLING_NODE__DATA_DIR=/opt/starling/data
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY bin ./bin
COPY etc ./etc
# the node runs as `node`: it writes its data volume, the generated development
# certificates (etc/certs) and plugin settings changed through the API (etc/plugins)
RUN mkdir -p /opt/starling/data \
 && chown -R node:node /opt/starling/data /opt/starling/etc
USER node
VOLUME ["/opt/starling/data"]
# every listener's default port (a test checks them against the configuration): MQTT tcp,
# MQTT/SSL, MQTT/WebSocket, MQTT/WSS, management API (and /status), dashboard, cluster mesh
EXPOSE 1883 8883 8083 8084 8080 18083 4370
# EMQ X 4's health check: GET /status on the management listener (bin/starling-status, plain
# JavaScript: a check every 15 s does not load the node). It follows
# STARLING_MANAGEMENT__LISTENER__HTTP when that moves the listener; exit 1 when it is off or
# the node does not answer "is running"
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "bin/starling-status"]
# SIGTERM (docker stop) makes the node stop cleanly: MQTT 5 clients get DISCONNECT 0x8B,
# the store is flushed, exit 0
CMD ["node", "bin/starling"]
