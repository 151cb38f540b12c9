// Copies one page file into the site as the browser needs it: JavaScript without its whole-line comments and
// indentation, CSS without its comments and indentation, anything else as it is. The page's sources keep their
// comments; what ships is smaller (no bundler, no renaming: the same code, line for line).
// Usage: node site_file.mjs SOURCE DESTINATION
import { readFileSync, writeFileSync } from 'node:fs';

const [source, destination] = process.argv.slice(2);
let text = readFileSync(source, 'utf8');
if (source.endsWith('.js')) {
  // Whole-line comments only: the page's sources have no multi-line strings, so a line that starts with // is one.
  text = text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('//')).join('\n') + '\n';
} else if (source.endsWith('.css')) {
  text = text.replace(/\/\*[\s\S]*?\*\//g, '').split('\n').map((l) => l.trim()).filter(Boolean).join('\n') + '\n';
}
writeFileSync(destination, text);
