/**
 * The promise `start` returns, or its synchronous throw as a rejection: one failing item of a batch
 * is refused alone, never throwing the batch out with the items already issued.
 */
export function settled<T>(start: () => Promise<T>): Promise<T> {
  try {
    return start();
  } catch (error) {
    return Promise.reject(error);
  }
}
