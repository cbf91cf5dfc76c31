# Hookline's container image (README, "Deployment").
#
#   docker build -t hookline .
#   docker run -d --name hookline -p 8080:8080 -v hookline-data:/data -e HOOKLINE_API_KEY=change-me hookline
#
# BASE_IMAGE is any Debian-based image with Node 24 (22 works too) and npm in /usr/local: the official
# slim image by default; scripts/docker-base.sh makes an equivalent one where no image registry is
# reachable. npm behind a TLS-intercepting proxy needs that proxy's CA: pass a bundle as the build
# secret `npm_ca` (`--secret id=npm_ca,src=/etc/ssl/certs/ca-certificates.crt`); it is mounted for the
# one `npm ci` step only and is in no layer of either stage. Needs BuildKit (the default builder).
ARG BASE_IMAGE=node:24-bookworm-slim

# ---- build: every dependency, tsc + the dashboard bundle + the CommonJS SDK, then the dev ones dropped
FROM ${BASE_IMAGE} AS build
WORKDIR /src
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
COPY package.json package-lock.json ./
RUN --mount=type=secret,id=npm_ca \
    if [ -s /run/secrets/npm_ca ]; then export NPM_CONFIG_CAFILE=/run/secrets/npm_ca NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi \
    && npm ci --no-audit --no-fund \
    && npm cache clean --force
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.mjs scripts/build-ui.mjs scripts/build-sdk-cjs.mjs ./scripts/
COPY src ./src
COPY web ./web
RUN node scripts/build.mjs \
    && npm prune --omit=dev --no-audit --no-fund \
    && find node_modules -depth -type d -empty -delete

# ---- runtime: dist/, production dependencies, package.json (the CLI reads its version); nothing else
FROM ${BASE_IMAGE} AS runtime
RUN groupadd --system --gid 10001 hookline \
    && useradd --system --uid 10001 --gid hookline --home-dir /data --no-create-home --shell /usr/sbin/nologin hookline \
    && mkdir -p /data && chown hookline:hookline /data && chmod 0750 /data
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
ENV NODE_ENV=production \
    HOOKLINE_HOST=0.0.0.0 \
    HOOKLINE_PORT=8080 \
    HOOKLINE_DATA_DIR=/data
USER hookline:hookline
VOLUME ["/data"]
EXPOSE 8080
# Liveness: /healthz answers 200 while the process serves, draining included (README, API table).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HOOKLINE_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1: `docker stop` sends SIGTERM straight to the server, which drains and exits 0. Give it
# longer than HOOKLINE_DELIVERY_TIMEOUT (15s): `docker stop -t 30`, compose's stop_grace_period.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/app/dist/cli/main.js"]
CMD ["serve"]
