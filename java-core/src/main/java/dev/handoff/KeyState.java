// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

/*
 * Per-key state of the fair share
 * ===============================
 * A KeyState<K> exists while its key holds or waits: created on the first grant or queueing
 * (reading the share), removed from the map when held == 0 and no request waits. Handles keep
 * their KeyState<K> only to give back by key (release(key, n) looks the key up again), so a stale
 * state (a key that went idle and came back) is never used for accounting. The one exception is
 * the solo key (FairShareSolo), kept while it holds nothing until the next section: one object,
 * so a million distinct keys over time still leave at most one idle state behind.
 *
 * The key's queue holds its undispatched tickets in FIFO order, linked by the node's prev/next
 * (which the core uses only while the node is in its own queue). The dispatched ticket is not
 * linked here, but it counts in waiting and queued until it settles.
 */

/**
 * A key of a {@link FairShareSemaphore} that holds or waits: its share, its counts, its virtual
 * finish time, its FIFO of waiting tickets and its place in the heap. Fields guarded by the fair
 * share's lock (read between stamps by observers). As the handles' give-back it releases by key.
 */
final class KeyState<K> implements PermitHandles.GiveBack {
    private final FairShareSemaphore<K> owner;
    final K key;
    /** The share, read at activation. */
    final long share;
    @GuardedBy("FairShareScheduler.lock")
    long held;
    /**
     * Permits granted to this key's requests provisionally and not yet confirmed or undone by
     * their party (see "Provisional grants" in FairShareScheduler): held by nobody meanwhile.
     */
    @GuardedBy("FairShareScheduler.lock")
    long transit;
    /** Virtual time at which the key's last grant finished (see StartTags). */
    @GuardedBy("FairShareScheduler.lock")
    long finish;
    /** Waiting requests of the key (the dispatched one included) and their weight. */
    @GuardedBy("FairShareScheduler.lock")
    int waiting;
    @GuardedBy("FairShareScheduler.lock")
    long queued;
    /** The key's FIFO of undispatched tickets (the dispatched one is not linked here). */
    @GuardedBy("FairShareScheduler.lock")
    FairShareTicket<K> head;
    @GuardedBy("FairShareScheduler.lock")
    FairShareTicket<K> tail;
    /** Its index in the {@link KeyHeap}, or -1 while its head may not be dispatched. */
    @GuardedBy("FairShareScheduler.lock")
    int heapIndex = -1;

    KeyState(FairShareSemaphore<K> owner, K key, long share) {
        this.owner = owner;
        this.key = key;
        this.share = share;
    }

    @Override
    public void giveBack(long permits) {
        owner.release(key, permits);
    }

    /** Appends {@code t} to this key's queue and counts it here. */
    void appendLocked(FairShareTicket<K> t) {
        t.prev = tail;
        t.next = null;
        if (tail == null) {
            head = t;
        } else {
            tail.next = t;
        }
        tail = t;
        waiting++;
        queued += t.permits;
    }

    /** Uncounts a ticket that leaves (already unlinked or dispatched). */
    void dequeuedLocked(FairShareTicket<K> t) {
        waiting--;
        queued -= t.permits;
    }

    /** Unlinks {@code t} from this key's queue. */
    void unlinkLocked(FairShareTicket<K> t) {
        Acquisition p = t.prev;
        Acquisition n = t.next;
        if (p == null) {
            head = FairShareTicket.of(n);
        } else {
            p.next = n;
        }
        if (n == null) {
            tail = FairShareTicket.of(p);
        } else {
            n.prev = p;
        }
        t.prev = null;
        t.next = null;
    }
}
