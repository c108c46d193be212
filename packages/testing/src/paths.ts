import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** The repository root (packages/testing/{src,dist}/ → ../../..). */
export const REPO_ROOT = path.resolve(HERE, '../../..');
/** The tool module of agentloop's own tests. */
export const TEST_TOOLS_MODULE = path.join(REPO_ROOT, 'packages/testing/tools/test-tools.mjs');
/** The built CLI entry point. */
export const CLI_MAIN = path.join(REPO_ROOT, 'packages/cli/dist/main.js');
