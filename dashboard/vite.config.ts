/**
 * The dashboard's build: `npm run build` runs `vite build --config dashboard/vite.config.ts`,
 * which writes the app into `dist/dashboard/` (served by svc_dashboard, plugins/dashboard/static.ts).
 * Pages are loaded when first opened (src/nav.ts), so the first visit fetches the shell, the
 * overview and the chart library only.
 */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'
import vue from '@vitejs/plugin-vue'

const root = fileURLToPath(new URL('.', import.meta.url))

export default defineConfig({
  root,
  base: '/',
  plugins: [vue()],
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../dist/dashboard', import.meta.url)),
    emptyOutDir: true,
    // no inline scripts or styles: the listener's Content-Security-Policy allows 'self' only
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 700,
    reportCompressedSize: false
  }
})
