import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { expect, test } from 'vitest';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** The lines (1-based) of `file` where tsc reports an error, compiled with the repository's options. */
function errorLines(file: string): number[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    fileURLToPath(new URL('../../../tsconfig.json', import.meta.url)),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
  )!;
  const program = ts.createProgram([file], config.options);
  const lines = ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.category === ts.DiagnosticCategory.Error)
    .map((d) => {
      expect(d.file?.fileName, ts.flattenDiagnosticMessageText(d.messageText, '\n')).toBe(file);
      return d.file!.getLineAndCharacterOfPosition(d.start!).line + 1;
    });
  return [...new Set(lines)].sort((a, b) => a - b);
}

const markedLines = (source: string) =>
  source.split('\n').flatMap((line, i) => (line.includes('// misuse:') ? [i + 1] : []));

test('a consumer that misuses a path, a body, an answer field or a GraphQL document does not compile', async () => {
  const { readFileSync } = await import('node:fs');
  const misuse = fixture('misuse.ts');
  const marked = markedLines(readFileSync(misuse, 'utf8'));
  expect(marked.length).toBe(8);
  // Every misuse, and nothing else, is an error.
  expect(errorLines(misuse)).toEqual(marked);
  // The same calls used properly compile.
  expect(errorLines(fixture('proper.ts'))).toEqual([]);
}, 120_000);
