import { timingSafeEqual } from 'node:crypto';
import type { Queue } from 'bullmq';
import express, { type NextFunction, type Request, type Response } from 'express';

export const ADMIN_PATH = '/admin/queues';

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The admin key from `Authorization: Bearer <key>` or HTTP Basic (any user, the key as password: browsers prompt). */
function presentedKey(req: Request): string | null {
  const h = req.get('authorization') ?? '';
  const bearer = /^Bearer\s+(.+)$/i.exec(h);
  if (bearer) return bearer[1]!.trim();
  const basic = /^Basic\s+(.+)$/i.exec(h);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    return decoded.slice(decoded.indexOf(':') + 1);
  }
  return null;
}

/** Bull Board's modules (imported by `loadBullBoard`). */
export interface BullBoard {
  createBullBoard: typeof import('@bull-board/api').createBullBoard;
  BullMQAdapter: typeof import('@bull-board/api/bullMQAdapter').BullMQAdapter;
  ExpressAdapter: typeof import('@bull-board/express').ExpressAdapter;
}

/**
 * Bull Board, imported only where an admin key is configured: it and what it brings (lodash, valibot, ejs) are ~1 MB
 * of source every other process would keep in its heap. Called before any worker starts, so a broken install stops
 * the process before it takes work.
 */
export async function loadBullBoard(): Promise<BullBoard> {
  try {
    const [api, adapter, expressAdapter] = await Promise.all([
      import('@bull-board/api'),
      import('@bull-board/api/bullMQAdapter'),
      import('@bull-board/express'),
    ]);
    return {
      createBullBoard: api.createBullBoard,
      BullMQAdapter: adapter.BullMQAdapter,
      ExpressAdapter: expressAdapter.ExpressAdapter,
    };
  } catch (e) {
    throw new Error(
      `AGENTLOOP_ADMIN_KEY is set, but Bull Board could not be loaded: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

/**
 * Bull Board over the deployment's queues, behind the admin key; read-only unless `writable` (retrying, removing
 * or promoting jobs by hand can break a run's exactly-once bookkeeping, so it is opt-in).
 */
export function adminRouter(
  board: BullBoard,
  queues: Queue[],
  opts: { key: string; writable: boolean },
): express.Router {
  const { createBullBoard, BullMQAdapter, ExpressAdapter } = board;
  const adapter = new ExpressAdapter();
  adapter.setBasePath(ADMIN_PATH);
  createBullBoard({
    // one queue name in several partitions: the board keys queues by name, so each shows under its partition's prefix
    queues: queues.map(
      (q) =>
        new BullMQAdapter(q, {
          readOnlyMode: !opts.writable,
          prefix: queues.filter((o) => o.name === q.name).length > 1 ? `${q.opts.prefix ?? ''}/` : '',
        }),
    ),
    serverAdapter: adapter,
  });
  const router = express.Router();
  router.use((req: Request, res: Response, next: NextFunction) => {
    const key = presentedKey(req);
    if (key && sameSecret(key, opts.key)) return next();
    res
      .set('www-authenticate', 'Basic realm="agentloop admin"')
      .status(401)
      .json({ error: { code: 'unauthorized', message: 'the admin key is required' } });
  });
  router.use(adapter.getRouter());
  return router;
}
