import { Ajv, type ValidateFunction } from 'ajv';

/** JSON Schema validation of edited tool arguments (the catalog holds every tool's schema as JSON Schema). */
export class ArgumentValidator {
  private readonly ajv = new Ajv({ allErrors: true, strict: false });
  private readonly cache = new Map<string, ValidateFunction>();

  validate(schema: Record<string, unknown>, value: unknown): string[] {
    const key = JSON.stringify(schema);
    let fn = this.cache.get(key);
    if (!fn) {
      try {
        fn = this.ajv.compile(schema);
      } catch {
        return [];
      }
      if (this.cache.size > 500) this.cache.clear();
      this.cache.set(key, fn);
    }
    if (fn(structuredClone(value))) return [];
    return (fn.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`);
  }
}
