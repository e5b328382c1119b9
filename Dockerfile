# One image for every role; compose picks the role with `--only`.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The client package is a workspace of the lockfile; print-schema (compiled with src) imports its generator.
COPY clients/typescript/package.json clients/typescript/
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src src
COPY workers workers
COPY schema schema
COPY clients/typescript/scripts clients/typescript/scripts
RUN npm run build && npm prune --omit=dev

FROM node:22-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY --from=build /app/schema schema
# The web dashboards are static files the API serves under /dashboard.
COPY dashboards/web dashboards/web
USER node
EXPOSE 3000
ENTRYPOINT ["node", "dist/src/main.js"]
