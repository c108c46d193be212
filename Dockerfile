# One image for every role: `docker run agentloop serve --role api` (or orchestrator, tool-runner, compressor).
FROM node:24-bookworm-slim AS build
WORKDIR /src
RUN npm install -g pnpm@10 --no-audit --no-fund
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml tsconfig.base.json tsconfig.json ./
COPY packages ./packages
COPY services ./services
RUN pnpm install --frozen-lockfile \
 && pnpm build \
 && pnpm deploy --filter @agentloop/cli --prod --legacy /out

FROM node:24-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build --chown=node:node /out ./
USER node
ENV NODE_ENV=production AGENTLOOP_HOST=0.0.0.0
EXPOSE 8080 9464
# the api answers on AGENTLOOP_PORT, the other roles on AGENTLOOP_METRICS_PORT (both serve /healthz)
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s \
  CMD node -e "const p=process.env.AGENTLOOP_HEALTH_PORT||process.env.AGENTLOOP_PORT||8080;fetch('http://127.0.0.1:'+p+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# tini forwards SIGTERM to node, which drains (AGENTLOOP_DRAIN_MS) and exits 0
ENTRYPOINT ["tini", "--", "node", "dist/main.js"]
CMD ["serve"]
