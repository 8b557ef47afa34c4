/**
 * How a worker splits its free slots over the queues it fetches from (one per tool), for one fetch.
 *
 * Fair by round robin: one slot at a time to each queue in turn, starting at `offset` (the caller
 * moves it every fetch, so no queue is always first), each queue capped by its own room (its
 * per-tool concurrency minus what it runs). So a busy tool cannot take every slot from a quiet one
 * that has work, and slots a capped queue cannot use go to the others. The result is the same as
 * filling the queues evenly up to their caps ("water filling"), computed in O(free).
 */
export interface QueueRoom {
  readonly queue: string;
  /** Slots this queue may still take (its cap minus its running jobs); 0 or less takes none. */
  readonly room: number;
}

/** Slots per queue, in the order the queues were given; queues that get none are left out. */
export function shareSlots(free: number, queues: readonly QueueRoom[], offset = 0): Map<string, number> {
  const shares = new Map<string, number>();
  const open = queues.filter((queue) => queue.room > 0);
  if (open.length === 0 || free <= 0) return shares;
  const taken = new Array<number>(open.length).fill(0);
  let left = Math.floor(free);
  let index = ((offset % open.length) + open.length) % open.length;
  let idleTurns = 0;
  while (left > 0 && idleTurns < open.length) {
    const queue = open[index] as QueueRoom;
    if ((taken[index] as number) < queue.room) {
      taken[index] = (taken[index] as number) + 1;
      left -= 1;
      idleTurns = 0;
    } else {
      idleTurns += 1;
    }
    index = (index + 1) % open.length;
  }
  open.forEach((queue, position) => {
    if ((taken[position] as number) > 0) shares.set(queue.queue, taken[position] as number);
  });
  return shares;
}
