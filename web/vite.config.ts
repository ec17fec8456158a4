/// <reference types="vitest/config" />
import { defineConfig } from 'vite'
import react from '@vitejs/plugin-react'

// The gateway embeds web/dist and serves it; during `npm run dev` the API is
// proxied to a local `weft up` (override with WEFT_URL).
const target = process.env.WEFT_URL ?? 'http://127.0.0.1:8900'

export default defineConfig({
  plugins: [react()],
  build: { outDir: 'dist', sourcemap: false, chunkSizeWarningLimit: 900 },
  server: {
    proxy: {
      '/v1': { target, changeOrigin: false },
      '/health': { target },
    },
  },
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
})
