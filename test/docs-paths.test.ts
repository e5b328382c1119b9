import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';

/**
 * The README and docs/ name files of the repository: every link and every path they name in code
 * spans or layout blocks must exist, so a move that forgets the docs fails here.
 */
const documents = [
  'README.md',
  'dashboards/README.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const TOP = /^(?:src|test|bench|workers|schema|dashboards|docs)\/[\w.\-/]*[\w/]$/;
/** What the tests write and git ignores (test/artifacts/): named by the docs, absent until a run. */
const ignored = readFileSync('.gitignore', 'utf8').split('\n').filter(Boolean);

function namedPaths(document: string): string[] {
  const text = readFileSync(document, 'utf8');
  const dir = path.dirname(document);
  const links = [...text.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z]+:/.test(target))
    .map((target) => path.normalize(path.join(dir, target)));
  // Code spans and layout lines: a repository path, possibly followed by other words.
  const spans = [...text.matchAll(/`([^`\n]+)`/g), ...text.matchAll(/^(\S+\/)\s/gm)]
    .map((m) => m[1]!.split(/\s/)[0]!.replace(/[:,]$/, ''))
    .filter((candidate) => TOP.test(candidate) && !/[<*{]/.test(candidate));
  return [...links, ...spans];
}

describe('the documentation names files that exist', () => {
  test.each(documents)('%s', (document) => {
    const missing = namedPaths(document).filter((named) => !existsSync(named) && !ignored.includes(named));
    expect(missing).toEqual([]);
  });

  test('the check sees links and code spans', () => {
    expect(namedPaths('README.md')).toEqual(
      expect.arrayContaining(['docs/api.md', 'src/app/write-path/create-post.ts', 'src/domain/']),
    );
  });
});
