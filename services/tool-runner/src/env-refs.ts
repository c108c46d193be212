const ENV_REF = /\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * `${env:NAME}` replaced from `environment` (SPEC §6: MCP servers, OpenAPI tools). Unset names are added to
 * `missing` (names only: the caller reports them and does not start what needs them); values substituted are added
 * to `secrets`, for the caller to keep out of what it shows.
 */
export function substituteEnvRefs(
  value: string,
  environment: Record<string, string | undefined>,
  missing: Set<string>,
  secrets?: Set<string>,
): string {
  return value.replace(ENV_REF, (_, name: string) => {
    const found = environment[name];
    if (found === undefined) missing.add(name);
    else secrets?.add(found);
    return found ?? '';
  });
}
