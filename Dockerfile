# The hospital-api image used by the docker runtime (templates/compose.yaml).
# NODE_IMAGE: a maintained Node LTS on Debian (Node 22.18 or later: node:sqlite).
# Hospitals without internet pass their registry's copy; the real-engine test
# tier (test/docker-engine/) passes a local Debian base with the official Node
# binary.
ARG NODE_IMAGE=node:24-bookworm-slim

# Build stage: every dependency, the compiled dist/, then the production
# dependencies only. No native addon is built (SQLite is node:sqlite), so no
# compiler is needed.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# scripts off for the install (prepare would build before src/ is here)
RUN npm ci --no-audit --no-fund --ignore-scripts && npm cache clean --force
# the sources (.dockerignore keeps tests, docs and any install material out);
# then compile, keep only production dependencies, and gather what runs in /out.
# --omit=optional drops the Node runtime the repository pins (node-linux-*): the
# image runs on NODE_IMAGE's own Node, as the ENTRYPOINT says.
COPY . ./
RUN npm run build \
 && npm prune --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund \
 && mkdir /out && cp -r package.json package-lock.json node_modules dist bin templates /out/

# Runtime stage: Node, the production node_modules and dist/; no compiler, no
# sources. Every step of an image is a full copy on storage drivers without
# copy-on-write (vfs), so the settings come first (cached) and the code last.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
# Two malloc arenas, as the native runtime runs the API (src/runtime/native/components.ts
# API_MALLOC_ENV): without the cap its resident memory climbs under load outside the JS heap.
ENV MALLOC_ARENA_MAX=2
WORKDIR /app
# The audit log's folder, the API user's: a Swarm stack mounts a named volume there, and Docker
# gives a new volume the owner and mode of the folder it is mounted on in the image (Docker docs,
# "Volumes": "Populate a volume using a container"); a folder the image lacks would be root's.
RUN mkdir -p /var/log/hospital-api && chown 1000:1000 /var/log/hospital-api && chmod 0700 /var/log/hospital-api
# Never root: the node user of the Debian-based Node images (uid 1000); compose sets the same.
USER 1000:1000
EXPOSE 9000
# A fixed young generation (16 MiB semi-space), as the native runtime runs its components
# (src/runtime/native/components.ts COMPONENT_NODE_ARGS): memory flat under steady load.
ENTRYPOINT ["node", "--max-semi-space-size=16", "bin/hospital-api.js"]
CMD ["serve", "--host", "0.0.0.0", "--port", "9000"]
COPY --from=build /out/ /app/
