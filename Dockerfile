# recruit-etl container image (docs/scheduling.md "Container image").
#   docker build -t recruit-etl .
#   docker run --rm -v recruit-etl-data:/data -e RECRUIT_ETL_BASE_URL=... recruit-etl run
# Multi-stage: the build stage compiles TypeScript with the dev dependencies; the runtime
# stage holds the compiled bin, the production dependencies and sql/ (models, seeds,
# migrations), and runs as the unprivileged user `node`, named by its ids 1000:1000 (hadolint
# DL3066; the CronJob's runAsUser / runAsGroup are the same).

FROM node:20-bookworm AS build
WORKDIR /build
# npm ci checks the lock against every workspace's package.json. Only the job and the event-type
# names (packages/event-types) are built: the simulator (packages/mock-api) is a development
# package (README.md "The simulator").
COPY package.json package-lock.json ./
COPY packages/event-types/package.json ./packages/event-types/
COPY packages/mock-api/package.json ./packages/mock-api/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY packages/event-types ./packages/event-types
COPY src ./src
COPY sql ./sql
RUN npx tsc -b tsconfig.build.json && chmod +x dist/cli.js

# The production dependencies without packages/mock-api: npm prune --omit=dev keeps every
# workspace's link and dependencies, an install where the simulator's folder is absent does not.
FROM node:20-bookworm AS deps
WORKDIR /build
COPY package.json package-lock.json ./
COPY packages/event-types/package.json ./packages/event-types/
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    RECRUIT_ETL_DB=/data/warehouse.duckdb \
    RECRUIT_ETL_EXPORT_DIR=/data/exports
WORKDIR /app
COPY --from=build --chown=root:root /build/package.json ./package.json
COPY --from=deps --chown=root:root /build/node_modules ./node_modules
COPY --from=build --chown=root:root /build/dist ./dist
COPY --from=build --chown=root:root /build/packages/event-types/package.json ./packages/event-types/package.json
COPY --from=build --chown=root:root /build/packages/event-types/dist ./packages/event-types/dist
COPY --from=build --chown=root:root /build/sql ./sql
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER 1000:1000
WORKDIR /data
# The bin, through its shebang (node with the V8 flags the extract's memory relies on).
ENTRYPOINT ["/app/dist/cli.js"]
CMD ["--help"]
