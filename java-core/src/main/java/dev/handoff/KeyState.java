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
 *
 * Provisional grants (coroutines), and acquisitions started by startAcquisition
 * ------------------------------------------------------------------------------
 * startAcquisition(key, n, acquisition) makes the user's Acquisition subclass the party of a
 * ticket, as a Waker is for acquireThen: the ticket is the node (queued, dispatched, granted); the
 * acquisition's hook field points to it, and its cancel, confirmGrant and undoGrant reach this
 * scheduler through the core's Front hooks. A coroutine (kotlin-ext) may be cancelled after its
 * claim() took a grant and before its waker resumes it; if another caller's release(key, n) could
 * count those permits as the key's meanwhile, it would pass or fail depending on which of the two
 * comes first, and a cancelled acquire could end with the give-back's over-release. So a ticket
 * whose party asks for it (provisionalGrant) is granted provisionally when it was queued:
 * settleDispatchedLocked counts its permits in the key's transit, not in held. They are held by
 * nobody (heldPermits(key) leaves them out; the core counts them as held, which only its own
 * over-release check, a backstop here, reads). The party then either confirms (transit to held) or
 * undoes (transit back to the core, then on in fair order, exactly as a release), each once, under
 * the lock. The undo decides only under the lock, because the core's grant (the ticket's state) is
 * visible to a cancelling thread before the section that made it has counted it in transit: a
 * lock-free "not provisional" answer would send that thread to release permits in transit, and to
 * wait for itself. A release(key, n) with held < n <= held + transit waits, outside the lock,
 * until transit changes, then decides again: either answer at once would be wrong for one of the
 * two outcomes, and both are decided within the party's own wake-up or cancellation (bounded as
 * the core's release is: see FifoCore.awaitTransit, which also runs the wake-ups this thread
 * queued; after the bound the release is an over-release, nothing changed). A release of permits
 * the key really holds never waits. A key with permits in transit stays in the map and counts them
 * against its cap, and solo mode is never entered while any are (the key would not be alone, or
 * capacity - free would exceed held). The ticket itself never asks the core for a provisional
 * grant: the per-key count is the one that decides, and the core's total stays consistent with it
 * because every release passes the scheduler's check first. A grant made at once is never
 * provisional: the caller's thread has it.
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
