import type http from 'node:http';

/** Cuts a stream mid-way as a dying server does: what was written reaches the client first, then the socket dies. */
export async function cutStream(res: http.ServerResponse): Promise<void> {
  await new Promise<void>((r) => res.write('', () => r()));
  await new Promise((r) => setTimeout(r, 20));
  res.socket?.destroy();
}
