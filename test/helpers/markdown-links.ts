import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * Relative links and `#anchors` in Markdown files, checked the way GitHub renders them: a link to a
 * file must name one that exists, and an anchor must be the slug of a heading in the file it points
 * to (or an explicit `<a id>` / `<a name>` there). Text inside fenced code blocks and inline code is
 * neither a heading nor a link.
 */

/** One link that does not resolve: where it is, what it says, and why it fails. */
export interface BrokenLink {
  file: string;
  line: number;
  target: string;
  reason: string;
}

const FENCE = /^\s{0,3}(`{3,}|~{3,})/;

/** The lines of a Markdown text with fenced code blocks blanked out (line numbers kept). */
function proseLines(markdown: string): string[] {
  const lines = markdown.split('\n');
  let fence: string | null = null;
  return lines.map((line) => {
    const match = FENCE.exec(line);
    if (fence === null) {
      if (match) {
        fence = match[1]!;
        return '';
      }
      return line;
    }
    if (match && match[1]![0] === fence[0] && match[1]!.length >= fence.length && line.trim() === match[1]) fence = null;
    return '';
  });
}

/** A line with its inline code spans blanked out, so that `[x](y)` inside backticks is no link. */
function withoutCodeSpans(line: string): string {
  return line.replace(/(`+)([\s\S]*?)\1/g, (span) => ' '.repeat(span.length));
}

/**
 * GitHub's anchor for a heading's text (github-slugger): the rendered text lowercased, every
 * character that is not a letter, mark, digit, connector (`_`), space or hyphen dropped, and each
 * space turned into a hyphen.
 */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1') // images: their alt text
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // links: their text
    .replace(/<[^>]+>/g, '') // inline HTML tags
    .replace(/[`*]/g, '') // code and emphasis markers
    .trim();
  return text.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Every anchor a Markdown text offers: its headings' slugs (duplicates numbered -1, -2, …) and explicit ids. */
export function markdownAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const counts = new Map<string, number>();
  const lines = proseLines(markdown);
  for (const line of lines) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+\s*)?$/.exec(line);
    if (heading) {
      const base = githubSlug(heading[1]!);
      let slug = base;
      let count = counts.get(base) ?? 0;
      while (anchors.has(slug)) slug = `${base}-${++count}`;
      counts.set(base, count);
      anchors.add(slug);
    }
    for (const explicit of line.matchAll(/<a\s+(?:[^>]*\s)?(?:id|name)="([^"]+)"/g)) anchors.add(explicit[1]!);
  }
  return anchors;
}

/** Every link target in a Markdown text with its 1-based line: inline links, images and reference definitions. */
export function markdownLinks(markdown: string): { line: number; target: string }[] {
  const links: { line: number; target: string }[] = [];
  proseLines(markdown).forEach((raw, index) => {
    const line = withoutCodeSpans(raw);
    for (const match of line.matchAll(/!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ line: index + 1, target: match[1]!.replace(/^<|>$/g, '') });
    }
    const definition = /^\s{0,3}\[[^\]]+\]:\s+(\S+)/.exec(line);
    if (definition) links.push({ line: index + 1, target: definition[1]! });
  });
  return links;
}

const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i;

/**
 * The links of the given Markdown files (paths relative to `root`) that do not resolve: a relative
 * path to nothing, or an anchor no heading of the target Markdown file makes. External links
 * (`https:`, `mailto:` …) are not followed.
 */
export function brokenMarkdownLinks(root: string, files: string[]): BrokenLink[] {
  const anchorsOf = new Map<string, Set<string>>();
  const anchors = (path: string) => {
    let set = anchorsOf.get(path);
    if (!set) anchorsOf.set(path, (set = markdownAnchors(readFileSync(path, 'utf8'))));
    return set;
  };
  const broken: BrokenLink[] = [];
  for (const file of files) {
    const source = resolve(root, file);
    for (const { line, target } of markdownLinks(readFileSync(source, 'utf8'))) {
      if (EXTERNAL.test(target)) continue;
      const hash = target.indexOf('#');
      const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
      const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
      const destination = pathPart === '' ? source : resolve(dirname(source), pathPart.split('?')[0]!);
      if (pathPart.startsWith('/')) {
        broken.push({ file, line, target, reason: 'an absolute path: GitHub resolves it from the site root, not the repository; make it relative' });
        continue;
      }
      if (!existsSync(destination)) {
        broken.push({ file, line, target, reason: `no such file: ${relative(root, destination)}` });
        continue;
      }
      if (anchor === null || anchor === '') continue;
      if (statSync(destination).isDirectory() || !destination.endsWith('.md')) continue;
      if (!anchors(destination).has(anchor)) {
        broken.push({ file, line, target, reason: `no heading in ${relative(root, destination)} makes the anchor #${anchor}` });
      }
    }
  }
  return broken;
}

/** README.md, BENCHMARKS.md, the SDK package's README and every Markdown file under docs/, relative to `root`. */
export function documentationFiles(root: string): string[] {
  const files = ['README.md', 'BENCHMARKS.md', 'packages/sdk/README.md'].filter((name) => existsSync(join(root, name)));
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  if (existsSync(join(root, 'docs'))) walk('docs');
  return files;
}
