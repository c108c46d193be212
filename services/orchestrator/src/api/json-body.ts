import type { Request } from 'express';
import { MAX_JSON_DEPTH, textJsonDepth } from '@agentloop/protocol';
import { ApiError } from './errors.js';

/** Media types a JSON body may be sent as (none at all is accepted too). */
const JSON_MEDIA_TYPE = /^\s*(application\/(json|[\w.-]+\+json)|text\/plain)\s*(;|$)/i;

/** Parses a JSON body read as text: depth-limited before parsing, 400 on malformed JSON. */
export function jsonBody(req: Request): unknown {
  const type = req.get('content-type');
  if (type !== undefined && !JSON_MEDIA_TYPE.test(type))
    throw new ApiError('invalid_request', 'unsupported media type: send the body as application/json');
  const text = typeof req.body === 'string' ? req.body : '';
  if (text.trim() === '') throw new ApiError('invalid_request', 'the request body must be a JSON object');
  if (textJsonDepth(text) > MAX_JSON_DEPTH)
    throw new ApiError('invalid_request', `JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ApiError('invalid_request', `malformed JSON: ${(e as Error).message}`);
  }
}
