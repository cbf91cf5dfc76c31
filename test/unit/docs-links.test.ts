import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { brokenMarkdownLinks, documentationFiles, githubSlug, markdownAnchors, markdownLinks } from '../helpers/markdown-links.js';
import { testDataDir } from '../helpers/temp-dir.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the documentation\'s links', () => {
  it('every relative link and #anchor in README.md, BENCHMARKS.md, packages/sdk/README.md and docs/**/*.md resolves', () => {
    const files = documentationFiles(ROOT);
    expect(files).toContain('README.md');
    expect(files).toContain('packages/sdk/README.md');
    expect(files.filter((file) => file.startsWith('docs/')).length).toBeGreaterThan(5);
    const broken = brokenMarkdownLinks(ROOT, files).map(({ file, line, target, reason }) => `${file}:${line} ${target}: ${reason}`);
    expect(broken, 'links that lead nowhere').toEqual([]);
  });

  it('README.md maps every page of docs/', () => {
    const files = documentationFiles(ROOT);
    const readmeTargets = new Set(markdownLinks(readFileText('README.md')).map(({ target }) => target.split('#')[0]));
    const pages = files.filter((file) => /^docs\/[^/]+\.md$/.test(file));
    expect(pages.filter((page) => !readmeTargets.has(page)), 'pages of docs/ the README does not link').toEqual([]);
  });
});

function readFileText(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

describe('the link checker', () => {
  it('makes GitHub\'s slugs: lowercase, punctuation dropped but hyphens and underscores, spaces to hyphens', () => {
    expect(githubSlug('Production NATS: a secured three-server cluster')).toBe('production-nats-a-secured-three-server-cluster');
    expect(githubSlug('`hookline receive`')).toBe('hookline-receive');
    expect(githubSlug('API (v1)')).toBe('api-v1');
    expect(githubSlug('Issue 12: memory with 100,000 retrying — `malloc_trim` after the idle GC')).toBe('issue-12-memory-with-100000-retrying--malloc_trim-after-the-idle-gc');
    expect(githubSlug('[Security](security.md) and **more**')).toBe('security-and-more');
  });

  it('numbers duplicate headings -1, -2 and ignores headings inside code fences', () => {
    const anchors = markdownAnchors('# Commands\n## Commands\n```sh\n# Commands\n```\n### Commands\n');
    expect([...anchors]).toEqual(['commands', 'commands-1', 'commands-2']);
  });

  it('reports a missing file, a missing anchor and an anchor of the same page; passes good ones', () => {
    const root = testDataDir();
    mkdirSync(join(root, 'docs'));
    writeFileSync(join(root, 'README.md'), [
      '# Title',
      '## Quick start',
      'See [cluster](docs/cluster.md#three-nodes), [gone](docs/gone.md), [here](#quick-start), [nowhere](#quick-stat).',
      'Not a link: `[x](docs/gone.md)`, nor a [site](https://example.com/#x).',
      '```md',
      '[inside a fence](docs/also-gone.md)',
      '```',
    ].join('\n'));
    writeFileSync(join(root, 'docs', 'cluster.md'), '# Cluster\n\n## Three nodes\n\nBack to [the top](../README.md#title) and [a typo](../README.md#titel).\n');
    const broken = brokenMarkdownLinks(root, ['README.md', 'docs/cluster.md']);
    expect(broken.map(({ file, line, target }) => `${file}:${line} ${target}`)).toEqual([
      'README.md:3 docs/gone.md',
      'README.md:3 #quick-stat',
      'docs/cluster.md:5 ../README.md#titel',
    ]);
  });
});
