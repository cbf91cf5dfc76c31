/**
 * A count with its noun, singular or plural as the number asks: `counted(1, 'event')` is "1 event",
 * `counted(2, 'event')` "2 events". Give `plural` when adding "s" is wrong ("kinds of case").
 */
export function counted(count: number, singular: string, plural = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : plural}`;
}
