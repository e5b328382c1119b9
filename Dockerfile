# One image for every role; compose picks the role with `--only`.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src src
COPY workers workers
COPY schema schema
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
