// Copies one page file into the site as the browser needs it: JavaScript without its whole-line comments and
// indentation, CSS without its comments and indentation, anything else as it is. The page's sources keep their
// comments; what ships is smaller (no bundler, no renaming: the same code, line for line).
// Usage: node site_file.mjs SOURCE DESTINATION
import { readFileSync, writeFileSync } from 'node:fs';

const [source, destination] = process.argv.slice(2);
let text = readFileSync(source, 'utf8');
if (source.endsWith('.js')) {
  // Whole-line comments only, which is safe while no string spans lines: a line with an odd number of backticks
  // (a template literal going on) stops the build rather than risk cutting into one.
  const open = text.split('\n').findIndex((l) => (l.match(/`/g) || []).length % 2 === 1);
  if (open >= 0) throw new Error(`${source}:${open + 1}: a template literal spans lines; site_file.mjs cannot strip it`);
  text = text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('//')).join('\n') + '\n';
} else if (source.endsWith('.css')) {
  text = text.replace(/\/\*[\s\S]*?\*\//g, '').split('\n').map((l) => l.trim()).filter(Boolean).join('\n') + '\n';
}
writeFileSync(destination, text);
