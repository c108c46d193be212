import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { clusterE2eExcluded, clusterE2eFiles } from '../../../test/cluster-pass.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'e2e');

/** The cluster pass (test/cluster-pass.ts) decides about every e2e file: a new one is run on the cluster or excluded. */
describe('the cluster pass covers the e2e files', () => {
  it('every e2e file is run on the cluster or excluded with a reason, not both, and each listed file exists', () => {
    const files = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.test.ts'))
      .map((f) => f.slice(0, -'.test.ts'.length))
      .sort();
    const excluded = Object.keys(clusterE2eExcluded);
    expect(clusterE2eFiles.filter((f) => excluded.includes(f))).toEqual([]);
    expect(new Set(clusterE2eFiles).size).toBe(clusterE2eFiles.length);
    expect([...clusterE2eFiles, ...excluded].sort()).toEqual(files);
    expect(Object.values(clusterE2eExcluded).filter((why) => why.trim().length < 10)).toEqual([]);
  });
});
