# Baton in one image: the CLI, the agent daemon and the embedded stack (Postgres, PostgREST, gateway).
#
#   docker build -t baton-agents:local .
#
# npm needs the registry while building. Where it is reached through a configuration of your own (a
# private registry, a proxy's CA), hand that in as build secrets; they are mounted for `npm ci` alone
# and never stored in a layer:
#
#   DOCKER_BUILDKIT=1 docker build --secret id=npmrc,src=$HOME/.npmrc --secret id=npm_ca,src=/path/ca.pem -t baton-agents:local .
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=secret,id=npmrc,target=/root/.npmrc \
    --mount=type=secret,id=npm_ca,target=/run/secrets/npm_ca \
    if [ -s /run/secrets/npm_ca ]; then export npm_config_cafile=/run/secrets/npm_ca; fi; \
    npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY supabase ./supabase
COPY migrations ./migrations
COPY scripts/agentcomms ./scripts/agentcomms
# The web board's page and the CLI are bundled at build time (scripts/build-board.mjs, scripts/build-cli.mjs).
COPY scripts/build-board.mjs scripts/build-cli.mjs ./scripts/
COPY web ./web
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/supabase ./supabase
COPY --from=build /app/migrations ./migrations
COPY --from=build /app/scripts/agentcomms ./scripts/agentcomms
COPY docker ./docker
# The Supabase CLI keeps a cache in supabase/.temp; the stack's data and the agents' settings live on
# volumes mounted at /data and /tokens, which start out owned by the unprivileged user.
RUN ln -s /app/dist/cli/index.js /usr/local/bin/baton \
    && mkdir -p /app/supabase/.temp /data /tokens \
    && chown node:node /app/supabase/.temp /data /tokens
USER node
ENV NODE_ENV=production BATON_STACK_DIR=/data
# The API answers (with the agent's token, where one is set); `baton health` writes nothing.
HEALTHCHECK --interval=10s --timeout=10s --start-period=60s --retries=3 CMD ["baton", "health"]
ENTRYPOINT ["baton"]
CMD ["--help"]
