/** Keeps the last lines a child process printed, so a failed start can show why. */
export class LogTail {
  private readonly lines: string[] = [];

  constructor(private readonly max = 40) {}

  push = (chunk: unknown): void => {
    const text = chunk instanceof Error ? chunk.message : String(chunk);
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      this.lines.push(line);
      if (this.lines.length > this.max) this.lines.shift();
    }
  };

  toString(): string {
    return this.lines.map((line) => `    | ${line}`).join('\n');
  }
}
