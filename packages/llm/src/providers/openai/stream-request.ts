import OpenAI from 'openai';

/** The request the SDK would send (its URL, headers and JSON body), as plain values: nothing of the SDK's is kept. */
async function built(
  client: OpenAI,
  path: string,
  body: Record<string, unknown>,
): Promise<{ url: string; init: RequestInit }> {
  const { url, req } = await client.buildRequest({ method: 'post', path, body, stream: true });
  const headers: Record<string, string> = {};
  new Headers(req.headers).forEach((v, k) => (headers[k] = v));
  return { url, init: { method: req.method ?? 'POST', headers, body: req.body ?? null } };
}

/** A status error as the SDK makes it (APIError.generate: RateLimitError, AuthenticationError, …, with the headers). */
async function statusError(response: Response): Promise<Error> {
  const text = await response.text().catch((err: unknown) => (err instanceof Error ? err.message : String(err)));
  let json: object | undefined;
  try {
    json = JSON.parse(text) as object;
  } catch {
    json = undefined;
  }
  return OpenAI.APIError.generate(response.status, json, json ? undefined : text, response.headers);
}

/**
 * Sends a streamed request as the SDK builds it (`buildRequest`: its URL, authentication and headers) on `transport`,
 * without the SDK's request path (makeRequest → fetchWithAuth → fetchWithTimeout): that path keeps its options, the
 * built request with its `Headers`, a second composed abort controller and their suspended frames for as long as a
 * call waits for its answer (docs/BENCHMARKS.md, "Capacity"). What the SDK's path did for a call without retries is
 * done here the same way: the client's timeout until the response's headers (APIConnectionTimeoutError), the
 * caller's abort (`controller`: APIUserAbortError), a transport failure (APIConnectionError), an HTTP error status
 * (APIError.generate with the response's headers). Resolves with the response, whose body is the SSE stream.
 *
 * Written with promise callbacks rather than as an async function: while the request waits, only the timer and the
 * controller are held here (an async function's frame would keep its arguments, the body among them).
 */
export function sendStreaming(
  client: OpenAI,
  transport: typeof fetch,
  path: string,
  body: Record<string, unknown>,
  controller: AbortController,
): Promise<Response> {
  return built(client, path, body).then(({ url, init }) => send(transport, url, init, controller, client.timeout));
}

/** The reason a request's controller is aborted with when the client's timeout passes before the headers. */
const TIMED_OUT = new Error('the request timed out before its response headers');
TIMED_OUT.name = 'AbortError';
const timeUp = (controller: AbortController) => controller.abort(TIMED_OUT);

function send(
  transport: typeof fetch,
  url: string,
  init: RequestInit,
  controller: AbortController,
  timeoutMs: number,
): Promise<Response> {
  if (controller.signal.aborted) return Promise.reject(new OpenAI.APIUserAbortError());
  // a function of the module with the controller as its argument: no closure per call in flight
  const timer = setTimeout(timeUp, timeoutMs, controller);
  init.signal = controller.signal;
  return transport(url, init).then(
    async (response) => {
      clearTimeout(timer);
      if (!response.ok) throw await statusError(response);
      return response;
    },
    (err: unknown) => {
      clearTimeout(timer);
      if (controller.signal.reason === TIMED_OUT) throw new OpenAI.APIConnectionTimeoutError();
      if (controller.signal.aborted) throw new OpenAI.APIUserAbortError();
      throw new OpenAI.APIConnectionError({ cause: err instanceof Error ? err : new Error(String(err)) });
    },
  );
}
