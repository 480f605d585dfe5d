// Builds the web app into host/assets/app/ (committed; the server embeds it). The output depends
// only on the sources and the pinned packages, so CI rebuilds it and fails when it differs.

import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { gzipSync } from 'node:zlib';

import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'host', 'assets', 'app');

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

await build({
  entryPoints: [
    { in: join(here, 'src', 'main.js'), out: 'app' },
    { in: join(here, 'src', 'app.css'), out: 'app' },
  ],
  bundle: true,
  format: 'esm',
  target: ['es2022'],
  minify: true,
  legalComments: 'eof',
  charset: 'utf8',
  outdir: out,
  logLevel: 'warning',
});
copyFileSync(join(here, 'index.html'), join(out, 'index.html'));
// Compressed copies for browsers that accept gzip (the header carries no time, so the bytes are
// the same on every build).
for (const name of ['app.js', 'app.css']) {
  writeFileSync(join(out, `${name}.gz`), gzipSync(readFileSync(join(out, name)), { level: 9 }));
}
