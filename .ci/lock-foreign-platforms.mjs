// The npm registry reachable from our machines serves only the linux-x64 builds of some native
// packages (chdb, msgpackr-extract), so `npm install` here leaves the other platforms' optional
// binaries out of package-lock.json, and `npm ci` then refuses the lock ("Missing: ... from lock
// file"). This adds those entries with their os/cpu, so `npm ci` skips them here and still accepts
// the lock. Run it after every `npm install`: node .ci/lock-foreign-platforms.mjs
import { readFileSync, writeFileSync } from 'node:fs';

/** `<name>-<os>-<cpu>[-<libc>]`, the naming of napi-rs and prebuild packages. */
const PLATFORM = /-(darwin|linux|win32|freebsd|android)-(arm64|x64|arm|ia32|riscv64|s390x|ppc64)(?:-(gnu|musl|msvc|gnueabihf))?$/;

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const added = [];
for (const entry of Object.values(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (lock.packages[key]) continue;
    const match = PLATFORM.exec(name);
    if (!match) continue;
    const [, os, cpu, abi] = match;
    lock.packages[key] = {
      version,
      optional: true,
      os: [os],
      cpu: [cpu],
      ...(abi === 'musl' || abi === 'gnu' ? { libc: [abi === 'gnu' ? 'glibc' : 'musl'] } : {}),
    };
    added.push(`${name}@${version}`);
  }
}
writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);
console.log(added.length ? `added to package-lock.json:\n  ${added.join('\n  ')}` : 'package-lock.json needs nothing');
