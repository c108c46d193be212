import { defineConfig } from 'vite';

// Served by the api role at /console/ (services/orchestrator/src/api/console.ts). No inline script or style ends up
// in index.html (the CSP there allows only 'self'): the module preload polyfill is off, as it is the one inline helper.
export default defineConfig({
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2023',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
  },
});
