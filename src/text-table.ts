/**
 * Rows of cells as aligned plain-text lines, for terminals and logs alike: each column as wide as
 * its widest cell, two spaces between columns, the last column not padded (no trailing spaces).
 */
export function textTable(rows: readonly (readonly string[])[]): string[] {
  if (rows.length === 0) return [];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0)));
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ').trimEnd());
}
