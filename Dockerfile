FROM node:20-bookworm-slim
WORKDIR /opt/starling
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && apt-get update && apt-get install -y --no-install-recommends openssl && rm -rf /var/lib/apt/lists/*
EXPOSE 1883 8883 8083 8084 8080 18083 4370
CMD ["node", "bin/starling"]
