# syntax=docker/dockerfile:1
# Taskgate: one image for every role (api, worker, relay) and the one-shot migrate job.
# The TypeScript sources run as they are, through Node's built-in type stripping: no build step.
FROM node:24-bookworm-slim

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first, so editing the sources does not reinstall them. Every workspace's
# package.json is needed for `npm ci` (test/deploy/container.test.ts checks the list).
COPY package.json package-lock.json ./
COPY apps/api/package.json apps/api/package.json
COPY apps/cli/package.json apps/cli/package.json
COPY apps/relay/package.json apps/relay/package.json
COPY apps/worker/package.json apps/worker/package.json
COPY packages/db/package.json packages/db/package.json
COPY packages/errors/package.json packages/errors/package.json
COPY packages/protocol/package.json packages/protocol/package.json
COPY packages/reliability/package.json packages/reliability/package.json
COPY packages/tools/package.json packages/tools/package.json
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY migrations ./migrations
COPY packages ./packages
COPY apps ./apps

USER node
ENV HOST=0.0.0.0 PORT=8080
EXPOSE 8080
# Node itself is PID 1's child-free main process, so SIGTERM from `docker stop` reaches Taskgate's
# graceful shutdown directly (npm would not forward it reliably).
ENTRYPOINT ["node", "apps/cli/bin/taskgate.js"]
CMD ["start"]
