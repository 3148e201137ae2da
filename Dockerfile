# The hospital-api image used by the docker runtime (templates/compose.yaml).
# Debian slim rather than alpine: better-sqlite3 ships prebuilt glibc binaries.
FROM node:20.19-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts=false && npm cache clean --force
COPY bin ./bin
COPY src ./src
COPY templates ./templates
COPY tsconfig.json ./
# The compose file runs the container as the installing user (user: uid:gid);
# without it, run as the image's unprivileged user.
USER node
EXPOSE 9000
ENTRYPOINT ["node", "bin/hospital-api.js"]
CMD ["serve", "--host", "0.0.0.0", "--port", "9000"]
