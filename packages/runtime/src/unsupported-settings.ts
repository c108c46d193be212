/** A variable of SPEC §1 whose feature this build lacks. */
interface UnsupportedSetting {
  reason: string;
  /** A value that asks for nothing this build lacks (e.g. one partition); any other value stops the process. */
  harmless?: (value: string) => boolean;
}

/**
 * Variables SPEC §1 names whose features this build does not have yet. A process started with one of them set would
 * quietly do something other than what the operator asked (one Redis instead of a cluster, tools that are not
 * there), so it does not start. Building a feature removes its line here.
 */
export const UNSUPPORTED_SETTINGS: Readonly<Record<string, UnsupportedSetting>> = {
  AGENTLOOP_PARTITIONS: {
    reason: 'partitions are not supported by this build: every run lives in one partition (only 1 is accepted)',
    harmless: (v) => v === '1',
  },
};

const isSet = (v: string | undefined): v is string => v !== undefined && v.trim() !== '';

/** One line per unsupported variable that is set (an empty value counts as unset), naming it and saying why. */
export function unsupportedSettingProblems(env: Record<string, string | undefined>): string[] {
  return Object.entries(UNSUPPORTED_SETTINGS)
    .filter(([name, s]) => isSet(env[name]) && !s.harmless?.(env[name].trim()))
    .map(([name, s]) => `${name} is set, but ${s.reason}; unset it to start`);
}
