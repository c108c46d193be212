import type { NextFunction, Request, Response } from 'express';
import type { ServicePartition } from '../service-partition.js';

/** A request past the API's authentication: the tenant its key belongs to (and, once found, its run's partition). */
export type Authed = Request & { tenant?: string; partition?: ServicePartition };

/** An async handler; `passThrough`: a middleware that calls next() when it resolves. */
export const wrap =
  (fn: (req: Authed, res: Response) => Promise<void>, passThrough = false) =>
  (req: Request, res: Response, next: NextFunction) => {
    fn(req as Authed, res).then(() => passThrough && next(), next);
  };
