# recruit-etl container image (docs/scheduling.md "Container image").
#   docker build -t recruit-etl .
#   docker run --rm -v recruit-etl-data:/data -e RECRUIT_ETL_BASE_URL=... recruit-etl run
# Multi-stage: the build stage compiles TypeScript with the dev dependencies; the runtime
# stage holds the compiled bin, the production dependencies and sql/ (models, seeds,
# migrations), and runs as the unprivileged user `node`, named by its ids 1000:1000 (hadolint
# DL3066; the CronJob's runAsUser / runAsGroup are the same).

FROM node:20-bookworm AS build
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY sql ./sql
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    RECRUIT_ETL_DB=/data/warehouse.duckdb \
    RECRUIT_ETL_EXPORT_DIR=/data/exports
WORKDIR /app
COPY --from=build --chown=root:root /build/package.json ./package.json
COPY --from=build --chown=root:root /build/node_modules ./node_modules
COPY --from=build --chown=root:root /build/dist ./dist
COPY --from=build --chown=root:root /build/sql ./sql
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER 1000:1000
WORKDIR /data
# The bin, through its shebang (node with the V8 flags the extract's memory relies on).
ENTRYPOINT ["/app/dist/cli.js"]
CMD ["--help"]
