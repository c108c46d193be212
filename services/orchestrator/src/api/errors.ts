import type { Response } from 'express';

export type ErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'idempotency_mismatch'
  | 'rate_limited'
  | 'internal';

const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  unauthorized: 401,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  idempotency_mismatch: 422,
  rate_limited: 429,
  internal: 500,
};

export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
  get status(): number {
    return STATUS[this.code];
  }
}

export function sendError(res: Response, err: ApiError): void {
  res.status(err.status).json({
    error: { code: err.code, message: err.message, ...(err.details !== undefined ? { details: err.details } : {}) },
  });
}
