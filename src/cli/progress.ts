import type { CliStream } from './io.js';

export interface ProgressBar {
  /** Redraws the bar (at most every 50 ms, and always at 100 %). */
  update(done: number, total: number, label?: string): void;
  /** Erases the bar, leaving the line clean for what is printed next. */
  finish(): void;
}

const BAR_WIDTH = 24;
const REDRAW_MS = 50;

/**
 * A one-line progress bar on `stream`, redrawn in place with `\r`. Only on a terminal: when the
 * stream is a file or a pipe (CI logs, tests) it draws nothing, so output stays clean to parse.
 */
export function progressBar(stream: CliStream, title: string, now: () => number = Date.now): ProgressBar {
  if (!stream.isTTY) return { update() {}, finish() {} };
  let lastDraw = -Infinity;
  let drawn = false;
  return {
    update(done, total, label = '') {
      const time = now();
      if (time - lastDraw < REDRAW_MS && done < total) return;
      lastDraw = time;
      const ratio = total > 0 ? Math.min(1, done / total) : 0;
      const filled = Math.round(ratio * BAR_WIDTH);
      const line = `${title} [${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}% ${done}/${total} ${label}`;
      // A terminal that reports no usable width (some pseudo-terminals say 0) gets the classic 80.
      const width = (stream.columns ?? 0) > 20 ? stream.columns! - 1 : 79;
      stream.write(`\r${line.slice(0, width)}\u001b[K`);
      drawn = true;
    },
    finish() {
      if (drawn) stream.write('\r\u001b[K');
      drawn = false;
    },
  };
}
