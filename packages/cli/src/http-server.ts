import type http from 'node:http';

/** The host to print in a URL: a wildcard bind address is reached on the loopback. */
export const displayHost = (h: string) => (h === '0.0.0.0' || h === '::' ? '127.0.0.1' : h);

export function listen(server: http.Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
}

export function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), 1000).unref();
  });
}
