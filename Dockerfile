# The hospital-api image used by the docker runtime (templates/compose.yaml).
# NODE_IMAGE: a maintained Node LTS on Debian (glibc: better-sqlite3 builds and
# runs there). Hospitals without internet pass their registry's copy; the
# real-engine test tier passes a local Debian base with the official Node binary.
ARG NODE_IMAGE=node:24-bookworm-slim

# Build stage: production dependencies, with the toolchain better-sqlite3 needs
# when no prebuilt binary can be fetched (the -slim images have no compiler).
FROM ${NODE_IMAGE} AS build
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 make g++ >/dev/null \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# node-gyp builds against the headers the Node image ships (no download)
ENV npm_config_nodedir=/usr/local
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# Runtime stage: Node, production node_modules and the sources; no compiler.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY templates ./templates
# Never root: the image's unprivileged node user (uid 1000); compose sets the same.
USER 1000:1000
EXPOSE 9000
ENTRYPOINT ["node", "bin/hospital-api.js"]
CMD ["serve", "--host", "0.0.0.0", "--port", "9000"]
