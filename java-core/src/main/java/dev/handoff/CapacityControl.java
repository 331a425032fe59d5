// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * Capacity control: resize (growth, shrink, debt), the failure of waiters heavier than a new
 * capacity, the widening of the word, and the drain after a close.
 *
 * <pre>
 * Capacity control (setCapacity, debt, shedding, up-to requests)
 * --------------------------------------------------------------
 * capacity is volatile, written under the lock while setCapacity holds GATED set and has
 * advanced the stamp (see the state word); GATED is cleared when the resize ends unless debt is
 * owed, so a resized semaphore is back on the lock-free paths at once. Growing by d is a release of d
 * new permits (giveBack: debt first, then the queue in FIFO order, then free). Shrinking by d
 * takes what it can from free and records the rest as debt (I5); held permits are never revoked.
 * Waiting nodes whose minimum exceeds the new capacity could never be granted: they fail at once
 * (FAILED, woken with an IllegalStateException) and their partial permits go back. Every path
 * that returns permits — release, a withdrawn or failed head's partial, growth — goes through
 * giveBack, so the debt is always paid first. Over-release: held = capacity + debt - free -
 * headAssigned (I4), checked under the lock whenever QUEUED or GATED is set.
 * Shedding is decided where the node would join the queue: a node that would have to queue while
 * queuedPermits + its minimum > maxQueuedPermits, or queueLength + 1 > maxQueueLength, is refused
 * (SemaphoreRejectedException), nothing changed. The check is made from the queue counters
 * against the tail the append CASes, so it holds for lock-free appends too (see "Queue
 * counters"); a lock-free append that finds the queue full decides again under the lock, where
 * the check is exact. queuedPermits is the sum of the minimums of the queued nodes, saturated at
 * Long.MAX_VALUE (a queue of heavy nodes can exceed it), and the bound check cannot overflow. An up-to node (minimum < permits)
 * is granted as soon as minimum permits can be given to it, taking up to permits of what is being
 * handed out; its permits field is then set to what it took.
 * closeAsync registers a future (volatile), then checks the word; every release checks the
 * future after its CAS. Both are volatile accesses, so at least one of them sees the other: the
 * future completes exactly when free == capacity with no debt and no queue after a close.
 * </pre>
 */
abstract class CapacityControl extends ProvisionalGrants {

    /** Permits owed after a shrink below what was held (I5). */
    @GuardedBy("lock")
    long debt;

    /**
     * Whether a setCapacity is running: GATED stays set until it ends (see gate()). Written under
     * the lock; volatile for {@link #transitEmptied}, which reads it (and then debt) without it.
     */
    @GuardedBy("lock")
    volatile boolean resizing;

    /**
     * Whether a semaphore in the wide layout (which has no resize stamp) was resized: GATED then
     * stays set for good, and release decides under the lock.
     */
    @GuardedBy("lock")
    boolean wideResized;

    /** Completed when, after a close, every permit is back and no debt is owed; or null. */
    volatile CompletableFuture<Void> drained;

    /**
     * Changes the capacity to {@code n} ({@code 0 <= n <= MAX_PERMITS} assumed); never blocks.
     * Growing hands the new permits back as a release would (debt first); shrinking takes what it
     * can from free and owes the rest; waiting nodes heavier than {@code n} fail at once.
     */
    void setCapacity(long n, String call) {
        resize(false, n, call);
    }

    /** setCapacity named "setCapacity(n)" in its messages, a string built only if one is needed. */
    void setCapacity(long n) {
        resize(false, n, null);
    }

    /** addCapacity named "addCapacity(delta)" in its messages, a string built only if one is needed. */
    long addCapacity(long delta) {
        return resize(true, delta, null);
    }

    /** The call a resize names in its messages: {@code call}, or built from the arguments. */
    static String resizeCall(@Nullable String call, boolean relative, long value) {
        return call != null ? call : (relative ? "addCapacity(" : "setCapacity(") + value + ")";
    }

    /**
     * Adds {@code delta} to the capacity atomically (negative: shrinks with debt), as
     * {@link #setCapacity} would set it to {@code capacity + delta}; returns the new capacity.
     *
     * @throws IllegalArgumentException if that would be below 0 or above MAX_PERMITS (nothing changes)
     */
    long addCapacity(long delta, String call) {
        return resize(true, delta, call);
    }

    /**
     * setCapacity ({@code relative} false: {@code value} is the new capacity, valid) or
     * addCapacity ({@code relative}: {@code value} is the change, checked against the capacity
     * under the lock); returns the new capacity.
     */
    long resize(boolean relative, long value, @Nullable String call) {
        Acquisition woken = null;
        long n;
        lock();
        try {
            long c = capacity;
            if (relative && (value > MAX_PERMITS - c || value < -c)) {
                throw new IllegalArgumentException(resizeCall(call, relative, value) + ": the capacity " + c
                        + (value < 0 ? " - " + Long.toUnsignedString(-value) : " + " + value)
                        + " must be between 0 and MAX_PERMITS (" + MAX_PERMITS + "); nothing changed");
            }
            n = relative ? c + value : value;
            if (n == c) {
                return n;
            }
            // GATED and a new stamp first, the capacity after: a lock-free release that read the word
            // before this point fails its CAS (see release and "State word").
            resizing = true;
            long s0 = word();
            for (; ; ) {
                long next = (s0 & WIDE) == 0 ? (s0 | GATED) + STAMP_UNIT : s0 | GATED;
                long witness = exchangeWord(s0, next);
                if (witness == s0) {
                    break;
                }
                s0 = witness;
            }
            if ((s0 & WIDE) != 0) {
                wideResized = true; // no stamp in the wide layout: release decides under the lock from now on
            } else if (n > COMPACT_MAX) {
                widen();
            }
            if (n > c) {
                capacity = n;
                woken = giveBack(n - c);
            } else {
                long d = c - n;
                long s = word();
                long took;
                for (; ; ) {
                    took = Math.min(free(s), d);
                    long witness = exchangeWord(s, s - (took << SHIFT));
                    if (witness == s) {
                        break;
                    }
                    s = witness;
                }
                seal(); // before the capacity: see "Appending without the lock" in WaitQueue
                debt += d - took;
                capacity = n;
                woken = failHeavierThan(n, resizeCall(call, relative, value));
            }
            resizing = false;
            updateWord(0L, GATED & ~gate()); // lock-free paths run again, unless debt is owed (I5)
        } finally {
            unlock();
        }
        settleAll(woken);
        checkDrained();
        return n;
    }

    /**
     * After a shrink to {@code n}: fails every waiting node whose minimum exceeds
     * {@code n} (it could never be granted), gives their partial permits back, and returns the
     * chain to wake (the failed nodes, then whoever their permits completed).
     */
    @GuardedBy("lock")
    Acquisition failHeavierThan(long n, String call) {
        Acquisition first = null;
        Acquisition last = null;
        long back = 0;
        boolean any = false;
        // The tail was sealed before the capacity changed: every node appended without the lock is
        // in, though the last links may still be in flight (awaitNext).
        Acquisition end = lastNode();
        for (Acquisition a = head; a != null; ) {
            Acquisition next = nextUpTo(a, end);
            long weight = a.minimum();
            if (weight > n) {
                any = true;
                if (a == head) {
                    back += headAssigned;
                    headAssigned = 0; // the next head has none (I3)
                }
                unlink(a);
                a.fail(CoreMessages.tooHeavy(call + " of a waiting acquisition", weight, n));
                if (last == null) {
                    first = a;
                } else {
                    last.next = a;
                }
                last = a;
            }
            a = next;
        }
        if (!any) {
            return null;
        }
        Acquisition more = giveBack(back); // also clears QUEUED if the queue emptied
        publishOutcomes(first); // FAILED: each keeps a failure
        last.next = more;
        return first;
    }

    /**
     * Completes the drain future of {@link #closeAsync} once, after a close, every permit is
     * back: free == capacity, no debt (GATED clear), nobody queued. Called after every release
     * and resize; no lock needed (see the notes).
     */
    void checkDrained() {
        CompletableFuture<Void> d = drained;
        if (d == null || d.isDone()) {
            return;
        }
        long s = word();
        if ((s & (CLOSED | QUEUED)) != CLOSED) {
            return;
        }
        boolean done;
        long c = capacity; // after the word, checked again: see release
        if ((s & GATED) == 0 && word() == s) {
            done = free(s) == c;
        } else {
            lock();
            try {
                long w = word();
                done = debt == 0 && (w & QUEUED) == 0 && free(w) == capacity;
            } finally {
                unlock();
            }
        }
        if (done) {
            d.complete(null);
        }
    }

    /**
     * Clears GATED if nothing keeps it set any more (see gate()). Confirming a
     * provisional grant happens without the lock and leaves GATED set; the next release under the
     * lock clears it, and releases are lock-free again from then on.
     */
    @GuardedBy("lock")
    void clearStaleGate() {
        if ((word() & GATED) != 0 && gate() == 0) {
            updateWord(0L, GATED);
        }
    }

    /**
     * After the confirmation that emptied transit, without the lock: clears GATED by one CAS if
     * the word is compact, nobody is queued, no claim window is open, it is not closed, and no
     * shrink's debt, resize or other grant in transit keeps it (the reasons read after the word).
     * A failed CAS leaves it to clearStaleGate. Why a CAS that succeeds is right: every reason is
     * added together with a change of the word that this CAS would see. A provisional grant is
     * made under the lock in a section that finds QUEUED set (its node was queued) and advances
     * the stamp (gateWithNewStamp), so the word differs from the one read here from then on, even
     * after the section clears QUEUED; a grant at once with a user's claim enters transit before
     * its CAS of the word takes the permits; setCapacity sets resizing before it advances the
     * stamp and the debt before resizing is cleared (a volatile write: if this reads resizing
     * false after the resize began, it reads its debt). As with resizes, the stamp is finite: a
     * wrong clear would need a multiple of 2^19 such sections between the read and the CAS.
     */
    @Override
    final void transitEmptied() {
        long s = gateToClear();
        if (s != 0L) {
            clearGate(s);
        }
    }

    /** The reads of {@link #transitEmptied}: the word whose GATED it may clear, or 0 if none. */
    final long gateToClear() {
        long s = word();
        return (s & (GATED | QUEUED | CLOSED | WIDE | WINDOW)) == GATED
                        && !resizing
                        && debt == 0
                        && !wideResized
                        && transit == 0
                ? s
                : 0L;
    }

    /** The CAS of {@link #transitEmptied}: one attempt to clear GATED in {@code s}; whether it did. */
    final boolean clearGate(long s) {
        return exchangeWord(s, s & ~GATED) == s;
    }

    /** The GATED bit the word must carry when no claim window is open. */
    @GuardedBy("lock")
    long gate() {
        return debt > 0 || resizing || wideResized || transit > 0 ? GATED : 0L;
    }

    /** close(), then a future completed when every held permit (and any debt) has come back. */
    CompletableFuture<Void> closeAsync() {
        close();
        CompletableFuture<Void> d = drained;
        if (d == null) {
            lock();
            try {
                d = drained;
                if (d == null) {
                    d = new CompletableFuture<>();
                    drained = d;
                }
            } finally {
                unlock();
            }
        }
        checkDrained();
        return d.copy(); // each caller's own: cancelling it does not touch the shared one
    }

    /**
     * With GATED set, as a resize grows the capacity past {@link #COMPACT_MAX}:
     * rewrites the word in the wide layout (a CAS loop: lock-free tryAcquire may race). The stamp
     * is dropped: from now on release decides under the lock (wideResized).
     */
    @GuardedBy("lock")
    void widen() {
        wideResized = true;
        long s = word();
        for (; ; ) {
            long next = (free(s) << SHIFT) | (s & (QUEUED | CLOSED | GATED | WINDOW)) | WIDE;
            long witness = exchangeWord(s, next);
            if (witness == s) {
                return;
            }
            s = witness;
        }
    }

    /** The permits {@code rem} come back; see {@link HandoffCore}. */
    @GuardedBy("lock")
    abstract Acquisition giveBack(long rem);

    /** Tells the listener of a settled chain and wakes it, after the lock is released. */
    abstract void settleAll(Acquisition chain);

    /** Closes the core; see {@link HandoffCore}. */
    abstract void close();

    CapacityControl(
            long capacity,
            long maxQueuedPermits,
            int maxQueueLength,
            @Nullable WaitListener listener,
            @Nullable Front front) {
        super(capacity, maxQueuedPermits, maxQueueLength, listener, front);
    }
}
