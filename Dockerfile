# syntax=docker/dockerfile:1
# Taskgate's two images, two targets of one build. The TypeScript sources run as they are, through
# Node's built-in type stripping: no build step.
# - api: Taskgate alone, no tool module and no examples/ (test/deploy/container.test.ts checks
#   that this stage copies nothing from examples/). The API offers and checks what the workers
#   publish to the tool catalog, so it holds no user code; the relay runs from it too.
#     docker build --target api -t taskgate-api:local .
# - worker (the default target): the api image plus the example tool modules, for the workers,
#   the migrate job (the modules' own migrations), an API that serves a module's HTTP routes
#   (those are the module's code), and `docker run` of every role in one container.
#     docker build -t taskgate:local .
FROM node:24-bookworm-slim AS api

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first, so editing the sources does not reinstall them. Every workspace's
# package.json is needed for `npm ci` (test/deploy/container.test.ts checks the list).
COPY package.json package-lock.json ./
COPY apps/api/package.json apps/api/package.json
COPY apps/cli/package.json apps/cli/package.json
COPY apps/relay/package.json apps/relay/package.json
COPY apps/worker/package.json apps/worker/package.json
COPY packages/client/package.json packages/client/package.json
COPY packages/db/package.json packages/db/package.json
COPY packages/errors/package.json packages/errors/package.json
COPY packages/gateway/package.json packages/gateway/package.json
COPY packages/metrics/package.json packages/metrics/package.json
COPY packages/protocol/package.json packages/protocol/package.json
COPY packages/reliability/package.json packages/reliability/package.json
COPY packages/sdk/package.json packages/sdk/package.json
COPY packages/tools/package.json packages/tools/package.json
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY migrations ./migrations
COPY packages ./packages
COPY apps ./apps

# /app belongs to root and stays read-only for the runtime user. The embedded Postgres (no
# DATABASE_URL) keeps its files in a directory of that user's own; mount a volume there to keep
# them across containers (docker run -v taskgate-data:/var/lib/taskgate …).
RUN mkdir -p /var/lib/taskgate && chown node:node /var/lib/taskgate
USER node
ENV HOST=0.0.0.0 PORT=8080 TASKGATE_DATA_DIR=/var/lib/taskgate
EXPOSE 8080
# With no examples/ beside it the CLI loads no tool module unless --tools or TASKGATE_TOOLS names
# one (apps/cli/src/tool-modules.ts): an API here offers what the workers publish.
# Node runs the CLI in this very process, with no npm or shell in between, so SIGTERM from
# `docker stop` reaches Taskgate's graceful shutdown. (The image has no node_modules/.bin/node,
# a devDependency, so bin/taskgate.js does not start a second Node.) Run it with an init
# (`docker run --init`, `init: true` in Compose) to reap what tool handlers' subprocesses leave.
ENTRYPOINT ["node", "apps/cli/bin/taskgate.js"]
CMD ["start", "--role", "api"]

FROM api AS worker
# The example tool modules, root's like the rest of /app (COPY ignores USER): with them beside the
# CLI, `start` serves the demo modules when no --tools or TASKGATE_TOOLS names others.
COPY examples ./examples
CMD ["start"]
