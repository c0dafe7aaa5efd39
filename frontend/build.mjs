// Regenerate static/vendor/vega/ from the packages pinned in package-lock.json.
//
//   cd frontend && npm ci && npm run build      (or: make vendor)
//
// - vega, vega-lite and vega-embed: the packages' own minified UMD builds, copied as published
//   (they define the globals `vega`, `vegaLite`, `vegaEmbed`), minus their `sourceMappingURL`
//   comment: the maps are not shipped, and Django's manifest storage would fail on a missing map.
// - vega-interpreter ships only as an ES module: esbuild bundles it into a classic script that
//   defines the global `vegaInterpreter` (the expression interpreter used under a strict CSP).
// - Each package's LICENSE is copied next to its file, and THIRD-PARTY-NOTICES.txt collects the
//   licences of every package in their production dependency trees (what the bundles contain).
// - VERSIONS.txt lists the versions, sizes and SHA-256 of the vendored files.
// - axe-core (a development dependency) goes to tests/e2e/vendor/axe-core/, not static/: only the
//   browser test of accessibility (tests/e2e/test_accessibility.py) injects it into the pages it
//   checks; no served page loads it, and collectstatic never ships it.
// The output is deterministic: running it twice on the same lock file gives the same bytes.

import {createHash} from 'node:crypto';
import {existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {dirname, join, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';
import {build} from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const modules = join(here, 'node_modules');
const out = resolve(here, '..', 'static', 'vendor', 'vega');
const testsOut = resolve(here, '..', 'tests', 'e2e', 'vendor', 'axe-core');

const COPIED = [
  {pkg: 'vega', from: 'build/vega.min.js', to: 'vega.min.js', global: 'vega'},
  {pkg: 'vega-lite', from: 'build/vega-lite.min.js', to: 'vega-lite.min.js', global: 'vegaLite'},
  {pkg: 'vega-embed', from: 'build/vega-embed.min.js', to: 'vega-embed.min.js', global: 'vegaEmbed'},
];
const BUNDLED = [
  {pkg: 'vega-interpreter', to: 'vega-interpreter.min.js', global: 'vegaInterpreter'},
];
// Types and command-line tools listed as dependencies that never reach a browser bundle.
const NOT_BUNDLED = new Set(['vega-typings', 'yargs']);

const packageDir = (name, from = modules) => {
  // Node's lookup: the nearest node_modules/<name> from `from` upwards, within frontend/.
  for (let dir = from; dir.startsWith(here); dir = dirname(dir)) {
    const candidate = dir.endsWith('node_modules') ? join(dir, name) : join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === here) break;
  }
  throw new Error(`package ${name} is not installed: run npm ci first`);
};
const manifest = (dir) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));

const stripSourceMap = (text) =>
  text.replace(/\n?\/\/# sourceMappingURL=\S*\s*$/u, '\n').replace(/\/\*# sourceMappingURL=[^*]*\*\/\s*$/u, '\n');

const licenceText = (dir) => {
  const file = readdirSync(dir).sort().find((f) => /^(licen[cs]e|copying)(\.(md|txt))?$/iu.test(f));
  return file ? readFileSync(join(dir, file), 'utf8').trim() : null;
};

const tree = (name, from, seen) => {
  if (NOT_BUNDLED.has(name)) return;
  const dir = packageDir(name, from);
  const meta = manifest(dir);
  const key = `${meta.name}@${meta.version}`;
  if (seen.has(key)) return;
  seen.set(key, {name: meta.name, version: meta.version, license: meta.license ?? 'see text', dir});
  for (const dep of Object.keys(meta.dependencies ?? {}).sort()) tree(dep, dir, seen);
};

const sha256 = (text) => createHash('sha256').update(text).digest('hex');

rmSync(out, {recursive: true, force: true});
mkdirSync(out, {recursive: true});
const files = [];

for (const {pkg, from, to, global} of COPIED) {
  const dir = packageDir(pkg);
  const text = stripSourceMap(readFileSync(join(dir, from), 'utf8'));
  writeFileSync(join(out, to), text);
  files.push({to, pkg, version: manifest(dir).version, global, text, how: `copied from ${pkg}/${from}`});
}

for (const {pkg, to, global} of BUNDLED) {
  const dir = packageDir(pkg);
  const {version, license} = manifest(dir);
  const result = await build({
    entryPoints: [pkg],
    absWorkingDir: here,
    bundle: true,
    format: 'iife',
    globalName: global,
    minify: true,
    target: 'es2020',
    legalComments: 'none',
    sourcemap: false,
    write: false,
    banner: {js: `/*! ${pkg} ${version} | ${license} | bundled by frontend/build.mjs (esbuild) as the global ${global} */`},
  });
  const text = result.outputFiles[0].text;
  writeFileSync(join(out, to), text);
  files.push({to, pkg, version, global, text, how: `esbuild bundle of ${pkg} (ES module) as an IIFE`});
}

for (const {to, text} of files) {
  if (/sourceMappingURL/u.test(text.split('\n').filter((l) => l.startsWith('//#') || l.startsWith('/*#')).join('\n'))) {
    throw new Error(`${to} still references a source map`);
  }
}

const notices = [];
const seen = new Map();
for (const {pkg} of files) {
  writeFileSync(join(out, `${pkg}.LICENSE`), `${licenceText(packageDir(pkg))}\n`);
  tree(pkg, modules, seen);
}
for (const key of [...seen.keys()].sort()) {
  const {name, version, license, dir} = seen.get(key);
  notices.push(`${'='.repeat(78)}\n${name} ${version} (${license})\n${'='.repeat(78)}\n${licenceText(dir) ?? `License: ${license} (no licence file in the package)`}\n`);
}
writeFileSync(join(out, 'THIRD-PARTY-NOTICES.txt'),
  'Licences of the packages in static/vendor/vega/ and of their production dependencies,\n' +
  'whose code the bundles contain. Generated by frontend/build.mjs.\n\n' + notices.join('\n'));

const lines = files.map(({to, pkg, version, global, text, how}) =>
  `${to}\t${pkg} ${version}\tglobal ${global}\t${Buffer.byteLength(text)} bytes\tsha256 ${sha256(text)}\t${how}`);
writeFileSync(join(out, 'VERSIONS.txt'),
  '# Generated by frontend/build.mjs from frontend/package-lock.json; do not edit.\n' +
  '# Load order in a page: vega, vega-lite, vega-interpreter, vega-embed, then js/charts.js.\n' +
  lines.join('\n') + '\n');
for (const line of lines) console.log(line.split('\t').slice(0, 4).join('  '));
console.log(`${seen.size} packages in THIRD-PARTY-NOTICES.txt; wrote ${out}`);

// The accessibility engine for the browser tests: its own build, as published (no source map).
rmSync(testsOut, {recursive: true, force: true});
mkdirSync(testsOut, {recursive: true});
{
  const dir = packageDir('axe-core');
  const {version, license} = manifest(dir);
  const text = readFileSync(join(dir, 'axe.min.js'), 'utf8');
  if (/sourceMappingURL/u.test(text)) throw new Error('axe.min.js references a source map');
  writeFileSync(join(testsOut, 'axe.min.js'), text);
  writeFileSync(join(testsOut, 'LICENSE'), `${licenceText(dir)}\n`);
  writeFileSync(join(testsOut, 'VERSIONS.txt'),
    '# Generated by frontend/build.mjs from frontend/package-lock.json; do not edit.\n' +
    '# Test-only: tests/e2e/test_accessibility.py injects it; no served page loads it.\n' +
    `axe.min.js\taxe-core ${version} (${license})\tglobal axe\t${Buffer.byteLength(text)} bytes\tsha256 ${sha256(text)}\n`);
  console.log(`axe.min.js  axe-core ${version}  global axe  (tests only); wrote ${testsOut}`);
}
