// The npm registry reachable from our machines serves only the linux-x64 builds of some native
// packages (chdb, msgpackr-extract), so `npm install` here leaves the other platforms' optional
// binaries out of package-lock.json, and `npm ci` then refuses the lock ("Missing: ... from lock
// file"). This adds those entries with their os/cpu, so `npm ci` skips them here and still accepts
// the lock. Run it after every `npm install`: node .ci/lock-foreign-platforms.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const PLATFORMS = {
  'darwin-arm64': [['darwin'], ['arm64']],
  'darwin-x64': [['darwin'], ['x64']],
  'linux-arm64-gnu': [['linux'], ['arm64']],
  'linux-arm64': [['linux'], ['arm64']],
  'linux-arm': [['linux'], ['arm']],
  'win32-x64': [['win32'], ['x64']],
};

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const added = [];
for (const entry of Object.values(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (lock.packages[key]) continue;
    const platform = Object.keys(PLATFORMS).find((suffix) => name.endsWith(`-${suffix}`));
    if (!platform) continue;
    const [os, cpu] = PLATFORMS[platform];
    lock.packages[key] = { version, optional: true, os, cpu };
    added.push(`${name}@${version}`);
  }
}
writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);
console.log(added.length ? `added to package-lock.json:\n  ${added.join('\n  ')}` : 'package-lock.json needs nothing');
