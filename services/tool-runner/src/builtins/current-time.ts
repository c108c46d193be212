import type { ToolDefinition } from '../tool-definition.js';

export const currentTime: ToolDefinition = {
  name: 'current_time',
  description: 'The current date and time, in an IANA time zone (default UTC).',
  parameters: {
    type: 'object',
    properties: { timezone: { type: 'string', description: 'IANA time zone, for example Asia/Tokyo' } },
    additionalProperties: false,
  },
  sideEffect: 'read',
  pool: 'default',
  timeoutMs: 5000,
  async execute(args) {
    const timezone = (args as { timezone?: string }).timezone ?? 'UTC';
    let fmt: Intl.DateTimeFormat;
    try {
      fmt = new Intl.DateTimeFormat('en-CA', {
        timeZone: timezone,
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
        hourCycle: 'h23',
        timeZoneName: 'longOffset',
      });
    } catch {
      throw new Error(`unknown time zone '${timezone}'`);
    }
    const parts = Object.fromEntries(fmt.formatToParts(new Date()).map((p) => [p.type, p.value]));
    const offset = String(parts.timeZoneName ?? 'GMT').replace('GMT', '') || '+00:00';
    const iso = `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${offset === '+00:00' ? 'Z' : offset}`;
    return { iso, timezone };
  },
};
