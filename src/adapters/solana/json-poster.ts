import http from 'node:http';
import https from 'node:https';

/**
 * POSTs of JSON over node:http(s) with kept-alive connections: for hot paths where undici's
 * `fetch` cost more CPU than the requests themselves (the RPC client's sends and status polls, the
 * write-path bench's load). Node's agent honours the server's keep-alive timeout hint, so an idle
 * socket is dropped before the server closes it.
 */
export interface JsonPoster {
  post(
    url: string,
    body: string,
    options?: { headers?: Record<string, string>; timeoutMs?: number },
  ): Promise<JsonAnswer>;
}

export interface JsonAnswer {
  status: number;
  /** Response headers, lower-cased names. */
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One poster per base URL's protocol; its sockets are reused across calls. */
export function createJsonPoster(protocol: 'http:' | 'https:'): JsonPoster {
  const transport = protocol === 'https:' ? https : http;
  const agent = new transport.Agent({ keepAlive: true });
  return {
    post: (url, body, { headers = {}, timeoutMs } = {}) =>
      new Promise((resolve, reject) => {
        const request = transport.request(
          url,
          {
            method: 'POST',
            agent,
            headers: {
              ...headers,
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
            },
            ...(timeoutMs !== undefined ? { signal: AbortSignal.timeout(timeoutMs) } : {}),
          },
          (response) => {
            let text = '';
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => (text += chunk));
            response.on('end', () =>
              resolve({ status: response.statusCode ?? 0, headers: response.headers, text }),
            );
            response.on('error', reject);
          },
        );
        request.on('error', reject);
        request.end(body);
      }),
  };
}
