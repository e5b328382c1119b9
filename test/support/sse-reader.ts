/** One server-sent event: its `id:`, `event:` and `data:` lines (data parsed as JSON). */
export interface SseFrame {
  id?: string;
  event?: string;
  data: any;
}

export interface SseReader {
  /** The next frame that carries data (comments and keep-alives are skipped). */
  next(timeoutMs?: number): Promise<SseFrame>;
  close(): void;
}

/**
 * Reads a text/event-stream response frame by frame. A missing frame fails after `timeoutMs`
 * rather than hanging the test.
 */
export function readSse(response: Response, abort: AbortController): SseReader {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  const nextFrame = async (): Promise<SseFrame> => {
    for (;;) {
      const end = buffered.indexOf('\n\n');
      if (end >= 0) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const frame: Partial<SseFrame> = {};
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('id:')) frame.id = line.slice(3).trim();
          else if (line.startsWith('event:')) frame.event = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).trim());
        }
        if (data.length > 0) return { ...frame, data: JSON.parse(data.join('\n')) };
        continue;
      }
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`stream ended; unparsed: ${buffered}`);
      buffered += chunk.value;
    }
  };
  return {
    next: (timeoutMs = 15_000) => {
      let timer: NodeJS.Timeout | undefined;
      return Promise.race([
        nextFrame().finally(() => clearTimeout(timer)),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no event in ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    },
    close: () => abort.abort(),
  };
}
