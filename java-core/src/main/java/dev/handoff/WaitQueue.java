// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * The core's FIFO queue of waiting nodes: head and tail, the append without the lock, unlink,
 * the seal of a shrink, and the counters behind queueLength, queuedPermits and the shedding
 * bounds. Guarded by the core's {@link CoreLock}, but for the tail, which appenders CAS.
 *
 * <pre>
 * Appending without the lock
 * --------------------------
 * Most acquisitions that wait find others waiting (QUEUED set, free == 0 by I2): there is nothing
 * to decide, the node only has to join the tail. Such a node is appended like a waiter of a CLH or
 * MPSC queue: prev := tail, CAS tail from that node to this one, then link the predecessor's next
 * (release). Only a holder of the lock may fill an empty queue (tail null -> first node, with the
 * QUEUED CAS and the partial assignment) or empty it (tail -> null), so an appender that finds no
 * tail takes the lock and decides there as before; the QUEUED bit, the word and the head are still
 * written under the lock only, and I1 holds whenever the lock is free. A node is queued from its
 * tail CAS on; the lock holders that walk the queue (hand-out, withdrawal, close, shrink, the
 * observers) may meet a predecessor whose next is not written yet, and wait for that write
 * (awaitNext: a few instructions of the appender). Taking the last node out (unlink, close)
 * detaches it from its predecessor first and then moves the tail back by CAS: if an appender got
 * in first, the CAS fails and the node is unlinked from the middle once the new link is written;
 * if the CAS wins, later appenders link behind the new tail, after the detaching write. close
 * swaps the tail to null (a sealed tail, see below, stays sealed), so every appender either made
 * it into the detached queue (and is CLOSED) or queues under the lock and finds CLOSED.
 * A shrink must see every node it could have to fail (weight above the new capacity), and an
 * appender checked the weight against the capacity before it appended (the face's check). So an
 * appender reads the capacity again after it has read the tail, and queues under the lock if the
 * weight no longer fits; and a shrink seals the tail before it writes the capacity: it swaps in the
 * SEALED marker (keeping the last node in sealedTail), so every append from then on fails its CAS
 * and decides under the lock, and waits for the links of the appends still in flight (so that in
 * a sealed queue a node whose next is null is the last). The next append under the lock puts a
 * real node back as the tail (appendLocked), which lock-free appenders have never seen, and
 * lock-free appends resume after one locked append. That node may leave again, and the tail would
 * then move back to a node an appender read before the seal, together with the old capacity
 * (an ABA of the tail): so the tail never moves back to a node queued before the last seal
 * without sealing again (casTail; unsealedSeq tells those nodes apart by their place). Then an
 * appender whose tail read came before the seal either CASed before it (its node is in the queue
 * the shrink walks) or fails its CAS; one whose tail read came after the seal reads the new
 * capacity.
 * withdraw is the one lock holder that reaches a node directly rather than through the queue, and
 * a started subclass node can be cancelled by its owner while the start is still appending it:
 * withdraw waits until the append is done (the predecessor links it) or given up (prev back to
 * null: not queued; the start then queues under the lock, after the withdrawal).
 *
 * Queue counters
 * --------------
 * queueLength(), queuedPermits() and the shedding bounds read counters, never walk the queue.
 * Each node carries, from before it is published, the number of nodes appended since the queue
 * was last empty up to and including it (seq) and the sum of the low 32 bits of their minimums
 * (cumLo: exact, below 2^63, for up to 2^31 nodes). An appender computes them from the tail it
 * CASes, so a lock-free append publishes the node and its counts in one step. The lock holder
 * keeps the same two sums for the nodes removed since the queue was last empty (removedCount,
 * removedLo). Then length = lastNode().seq - removedCount (I7). A node removed from the head or
 * the middle is added to the removed sums; the last node removed moves the tail back to its
 * predecessor p, and the nodes counted between p and it (all removed already) are taken out of
 * the removed sums first; emptying the queue resets them. The high 32 bits of the minimums are
 * not summed per node (that would cost every node 8 bytes for weights few use): the lock holder
 * keeps their sum over the queued nodes (queuedHi), and a node of 2^32 permits or more, the only
 * kind with high bits, is appended under the lock only. The queued weight is then
 * queuedHi * 2^32 + lastNode().cumLo - removedLo, saturated at Long.MAX_VALUE. Under the lock the
 * counters are exact and O(1). A lock-free appender of a bounded semaphore reads the tail and
 * then the counters (acquire loads; the lock holder writes them with release stores, before it
 * publishes a heavy node and before it moves the tail back): the removed sums only grow until
 * the tail moves, and queuedHi grows only by an append that moves the tail (both fail its CAS),
 * so the length and weight it computes are never below the true ones when its CAS succeeds, and a
 * bound it finds exceeded is decided again under the lock. The queue length and weight observers
 * read the tail and the counters between two equal stamps of the lock (see "Observers" in
 * CoreLock), which makes a reading consistent with the word and the node states without taking it
 * (the Lincheck tests check them against the rest).
 * </pre>
 */
abstract class WaitQueue extends StateWord {

    /**
     * While a lock holder waits for a lock-free appender's link (see pause): how many times it
     * yields after its {@link #LOCK_SPINS} polls, and then how long each of its parks lasts.
     */
    static final int APPEND_YIELDS = 64;

    static final long APPEND_PARK_NANOS = 50_000L;

    /**
     * The queue counters (see "Queue counters" above): how many nodes were removed, the sum of the
     * low 32 bits of their minimums, and the sum of the high 32 bits of the minimums of the nodes
     * queued now. Written under the lock (release stores); read under it, and by lock-free
     * appenders of a bounded semaphore (acquire loads, after their read of the tail).
     */
    @GuardedBy("lock")
    int removedCount;

    @GuardedBy("lock")
    long removedLo;

    @GuardedBy("lock")
    long queuedHi;

    /** Shedding bounds: the most weight, and the most nodes, that may wait. */
    final long maxQueuedPermits;

    final int maxQueueLength;

    /** Whether either shedding bound is set. Final. */
    final boolean bounded;

    /**
     * The internal lock (see "The lock" in CoreLock). Guards the queue, the QUEUED/CLOSED/GATED
     * bits, every node's links and state, headAssigned, debt and the removed-node counters.
     */
    final CoreLock lock = new CoreLock();

    /**
     * FIFO queue of waiting nodes. {@code tail} is volatile: a node joins a non-empty queue
     * without the lock, by CAS on it (see "Appending without the lock" above).
     */
    @GuardedBy("lock")
    Acquisition head;

    volatile Acquisition tail;

    /**
     * The last node while the tail is {@link #SEALED} (from a shrink until the next append under
     * the lock, see "Appending without the lock" above), else unused.
     */
    @GuardedBy("lock")
    Acquisition sealedTail;

    /**
     * The {@code seq} of the node whose append under the lock last unsealed the tail, or 0 if the
     * tail was not sealed since the queue was last empty. Nodes with a smaller seq were queued
     * before that seal, and a lock-free appender may still hold one of them as the tail it read
     * (with the capacity it read then): the tail never moves back to such a node without sealing
     * again (casTail).
     */
    @GuardedBy("lock")
    int unsealedSeq;

    /**
     * Permits already handed to the head while it waits (partial assignment, I3); 0 while the
     * queue is empty.
     */
    @GuardedBy("lock")
    long headAssigned;

    /**
     * Told of every wait, or {@code null}: final, set at construction. Only the slow paths read
     * it, and each calls it after the lock is released (see "Listener" in ListenerCalls).
     */
    final WaitListener listener;

    /**
     * The queue length, from the counters (O(1), see "Queue counters"): under the lock, or between
     * two equal quiet stamps (then any value may be read if they differ, and is discarded).
     */
    int countedLength() {
        Acquisition t = lastNode();
        return t == null ? 0 : Math.max(0, t.seq - removedCount); // >= 0 even if read while a section runs
    }

    /** As {@link #countedLength()}: the sum of the queued minimums, saturated at Long.MAX_VALUE. */
    long countedPermits() {
        Acquisition t = lastNode();
        if (t == null) {
            return 0L;
        }
        long hi = queuedHi;
        long lo = t.cumLo - removedLo;
        return hi < 0 || lo < 0 ? 0L : saturatedSum(hi, lo); // (negative only if read while a section runs)
    }

    /**
     * {@code hi * 2^32 + lo} for two exact partial sums ({@code 0 <= hi, lo}; the low parts of at
     * most 2^31 minimums sum below 2^63), or Long.MAX_VALUE if that does not fit in a long.
     */
    static long saturatedSum(long hi, long lo) {
        if (hi >= 1L << 31) {
            return Long.MAX_VALUE;
        }
        long sum = (hi << 32) + lo;
        return sum < 0 ? Long.MAX_VALUE : sum; // both terms are below 2^63: a wrap is negative
    }

    /** The internal lock: the blocker of a thread parked on it (for tests and thread dumps). */
    CoreLock internalLock() {
        return lock;
    }

    /** Whether this thread holds the lock (a claim() running under it). */
    boolean heldByCurrentThread() {
        return lock.heldBy(Thread.currentThread());
    }

    /**
     * Takes the lock, refusing re-entry: only a {@link Waker#claim()} (which runs under the lock)
     * could re-enter, and the contract forbids it to call back into the semaphore.
     */
    void lock() {
        lock.lock();
    }

    /** Gives the lock back; the first thread parked on it, if any, is unparked. */
    void unlock() {
        lock.unlock();
    }

    // ------------------------------------------------------------------ queue links (locked)

    /** The tail from a shrink until the next append under the lock (see the notes). Never queued. */
    static final Acquisition SEALED = new Acquisition() {
        @Override
        protected void wake() {
            throw new AssertionError("the SEALED marker is never woken");
        }
    };

    /**
     * What {@link #tryAppend} returns when it could not append: the queue is empty or sealed, or
     * the node too heavy (for the capacity, or 2^32 permits or more: see "Queue counters").
     */
    static final int APPEND_NONE = -1;

    /** What {@link #tryAppend} returns when the node would exceed a queue bound (exact under the lock). */
    static final int APPEND_FULL = -2;

    /** Under the lock (or between two equal quiet stamps): the last node of the queue, or null. */
    Acquisition lastNode() {
        Acquisition t = tail;
        return t == SEALED ? sealedTail : t;
    }

    /**
     * Sets {@code a}'s queue counters as the node after {@code t} (null: the first of an empty
     * queue, whose removed-node counters are zero). Before {@code a} is published.
     */
    static void countBehind(Acquisition a, Acquisition t) {
        long w = a.minimum();
        if (t == null) {
            a.seq = 1;
            a.cumLo = w & LOW_32;
        } else {
            a.seq = t.seq + 1;
            a.cumLo = t.cumLo + (w & LOW_32);
        }
    }

    static final long LOW_32 = 0xFFFF_FFFFL;

    /**
     * Appends {@code a}, the first node of an empty queue becoming the head, or
     * refuses it if a queue bound would be exceeded. Returns the number of nodes ahead of it, or
     * a negative value if refused (nothing changed). Behind a sealed tail, it unseals: lock-free
     * appends resume behind a node checked against the current capacity.
     */
    @GuardedBy("lock")
    int appendLocked(Acquisition a, long min) {
        Acquisition t = tail;
        if (t != SEALED && t != null) {
            int ahead = casAppend(a, min, min >>> 32); // exact here: the counters are stable
            if (ahead == APPEND_NONE) {
                throw new AssertionError("the tail vanished under the lock"); // only lock holders empty or seal it
            }
            return ahead;
        }
        Acquisition last = t == SEALED ? sealedTail : null;
        countBehind(a, last);
        int ahead = last == null ? 0 : last.seq - removedCount;
        long hi = queuedHi + (min >>> 32);
        if (exceedsBounds(a, ahead, hi, removedLo)) {
            return APPEND_FULL;
        }
        setQueuedHi(hi);
        if (listener != null) {
            a.watch(ahead);
        }
        a.prev = last;
        if (last == null) {
            head = a;
        } else {
            last.next = a;
        }
        sealedTail = null;
        unsealedSeq = t == SEALED ? a.seq : 0; // see casTail
        tail = a; // volatile: publishes the node (and the head) to appenders
        return ahead;
    }

    /**
     * Whether {@code a}, counted behind {@code ahead} nodes, would exceed a queue bound, with
     * {@code hi} the high parts' sum of the queue it would make.
     */
    boolean exceedsBounds(Acquisition a, int ahead, long hi, long removedLo) {
        return bounded && (ahead >= maxQueueLength || saturatedSum(hi, a.cumLo - removedLo) > maxQueuedPermits);
    }

    /**
     * Appends {@code a} behind the current tail by CAS, with or without the lock. Returns the number
     * of nodes ahead of it; or {@link #APPEND_NONE} (nothing changed) if the queue is empty, which
     * only a holder of the lock may fill, or sealed, or {@code min} exceeds the capacity read after
     * the tail (then the caller decides under the lock); or {@link #APPEND_FULL} if a queue bound
     * would be exceeded. Without the lock the bound check is conservative (the removed-node counters
     * are read after the tail, and only grow until the tail moves, which fails the CAS): a refusal
     * is then decided again under the lock, where it is exact. The node's fields, counters and
     * {@code prev} are written before the CAS that publishes it; the predecessor's {@code next} is
     * written after it, so a lock holder that reaches a node whose {@code next} is still null
     * while the tail is elsewhere waits for that write (awaitNext).
     */
    int tryAppend(Acquisition a, long min) {
        return min >>> 32 == 0 ? casAppend(a, min, 0L) : APPEND_NONE; // a heavy node: under the lock
    }

    /**
     * {@link #tryAppend}'s CAS loop, for a node whose minimum has the high part {@code hi}, which
     * is 0 unless the caller holds the lock (then it is added to queuedHi before the node is
     * published, see "Queue counters").
     */
    private int casAppend(Acquisition a, long min, long hi) {
        Acquisition t;
        while ((t = tail) != null && t != SEALED) {
            if (min > capacity) {
                break; // a shrink since the face's check: it seals the tail first, see the notes
            }
            PREV.setRelease(a, t); // withdraw may be watching a started subclass node (awaitAppended)
            countBehind(a, t);
            int ahead = Math.max(0, t.seq - (int) REMOVED_COUNT.getAcquire(this));
            long hiNow = (long) QUEUED_HI.getAcquire(this);
            if (bounded && exceedsBounds(a, ahead, hiNow + hi, (long) REMOVED_LO.getAcquire(this))) {
                PREV.setRelease(a, null);
                return APPEND_FULL;
            }
            if (listener != null) {
                a.watch(ahead);
            }
            if (hi != 0) {
                setQueuedHi(hiNow + hi); // before the node is published (a reader of the tail sees it)
            }
            if (TAIL.compareAndSet(this, t, a)) {
                NEXT.setRelease(t, a);
                return ahead;
            }
            if (hi != 0) {
                setQueuedHi(hiNow); // a lock-free appender got in first: retry behind it
            }
        }
        PREV.setRelease(a, null);
        return APPEND_NONE;
    }

    /**
     * For a WAITING node that withdraw reached directly (not through the queue):
     * whether it is queued. A subclass node is visible to its owner as soon as it is started, so
     * a cancel() from another thread may come while the start is still appending it without the
     * lock: then this waits until the append is done (the predecessor links it) or given up (prev
     * back to null; the start then queues under the lock, after this withdrawal, which saw nothing).
     */
    @GuardedBy("lock")
    boolean awaitAppended(Acquisition a) {
        if (a == head) {
            return true;
        }
        Acquisition p;
        for (int spins = 0; (p = (Acquisition) PREV.getAcquire(a)) != null && NEXT.getAcquire(p) != a; spins++) {
            pause(spins);
        }
        return p != null;
    }

    /**
     * For a walk from the head to {@code last} (a snapshot of the last node): the
     * node after {@code a}, or null once {@code a} is {@code last}; waits for a link in flight.
     */
    @GuardedBy("lock")
    static Acquisition nextUpTo(Acquisition a, Acquisition last) {
        return a == last ? null : awaitNext(a);
    }

    /** {@code a}'s successor, waiting for an appender's link if one is in flight. */
    @GuardedBy("lock")
    static Acquisition awaitNext(Acquisition a) {
        Acquisition n;
        for (int spins = 0; (n = (Acquisition) NEXT.getAcquire(a)) == null; spins++) {
            pause(spins);
        }
        return n;
    }

    /**
     * One turn of waiting for an appender that is between its CAS of the tail and its next write:
     * a few instructions, unless it was descheduled right there. Then yield the core to it a
     * bounded number of times, and after that park for short periods rather than keep a core busy
     * while holding the lock.
     */
    static void pause(int spins) {
        if (spins < CoreLock.LOCK_SPINS) {
            Thread.onSpinWait();
        } else if (spins < CoreLock.LOCK_SPINS + APPEND_YIELDS) {
            Thread.yield();
        } else {
            LockSupport.parkNanos(APPEND_PARK_NANOS); // it was descheduled: give the core up for a while
        }
    }

    /**
     * Moves the tail back from {@code a}, whose next is null, to {@code p}; fails
     * only if a lock-free appender got in behind {@code a}. If {@code p} was queued before the
     * last seal, the tail is sealed again instead, with {@code p} the last node: an appender that
     * read {@code p} as the tail before that seal read the capacity from before the shrink, and
     * must fail its CAS (no ABA of the tail across a seal). The nodes up to {@code p} were linked
     * when the seal waited for the links in flight, so the sealed queue is whole.
     */
    @GuardedBy("lock")
    boolean casTail(Acquisition a, Acquisition p) {
        if (tail == SEALED) {
            // No appender without the lock, and the seal waited for the last links in flight:
            // a node whose next is null is the last.
            if (sealedTail != a) {
                throw new AssertionError("sealed queue: " + a + " has no next but is not the last node");
            }
            sealedTail = p;
            return true;
        }
        if (p != null && p.seq < unsealedSeq) {
            if (!TAIL.compareAndSet(this, a, SEALED)) {
                return false;
            }
            sealedTail = p;
            return true;
        }
        return TAIL.compareAndSet(this, a, p);
    }

    /**
     * Removes {@code a} from the queue. If it looks like the tail, it is detached
     * from its predecessor first and then the tail is moved back by CAS, so that an appender that
     * links behind the new tail is never overwritten; if the CAS fails, a node is being appended
     * behind {@code a}, and {@code a} is unlinked from the middle once that link is written. Keeps
     * the queue counters (see "Queue counters" above).
     */
    @GuardedBy("lock")
    void unlink(Acquisition a) {
        Acquisition p = a.prev;
        Acquisition n = (Acquisition) NEXT.getAcquire(a);
        long w = a.minimum();
        if (n == null) {
            if (p == null) {
                head = null;
            } else {
                p.next = null;
            }
            // The tail moves back to p: the nodes counted between p and a (all removed already)
            // leave the removed-node counters, before the CAS, so that an appender that reads the
            // tail and then the counters never counts the queue shorter than it is.
            int count = 0;
            long lo = 0;
            if (p != null) {
                count = a.seq - p.seq - 1;
                lo = a.cumLo - (w & LOW_32) - p.cumLo;
                addRemoved(-count, -lo);
            }
            if (casTail(a, p)) {
                if (p == null) {
                    clearCounters(); // empty: the next first node counts from zero
                } else {
                    leaveQueuedHi(w);
                }
                a.prev = null;
                return;
            }
            addRemoved(count, lo); // an appender got in behind a: undo, and unlink a from the middle
            if (p == null) {
                head = a;
            } else {
                p.next = a;
            }
            n = awaitNext(a);
        }
        if (p == null) {
            head = n;
        } else {
            p.next = n;
        }
        n.prev = p;
        addRemoved(1, w & LOW_32);
        leaveQueuedHi(w);
        a.prev = null;
        a.next = null;
    }

    /** Adds to the removed-node counters (release stores: see tryAppend). */
    @GuardedBy("lock")
    private void addRemoved(int count, long lo) {
        REMOVED_COUNT.setRelease(this, removedCount + count);
        REMOVED_LO.setRelease(this, removedLo + lo);
    }

    /** Takes the high part of a removed node's minimum {@code w} out of queuedHi. */
    @GuardedBy("lock")
    private void leaveQueuedHi(long w) {
        if (w >>> 32 != 0) {
            setQueuedHi(queuedHi - (w >>> 32));
        }
    }

    @GuardedBy("lock")
    private void setQueuedHi(long hi) {
        QUEUED_HI.setRelease(this, hi);
    }

    /** The queue is empty: every counter back to zero, so the next first node counts from there. */
    @GuardedBy("lock")
    void clearCounters() {
        REMOVED_COUNT.setRelease(this, 0);
        REMOVED_LO.setRelease(this, 0L);
        QUEUED_HI.setRelease(this, 0L);
    }

    /**
     * In a shrink: swaps the {@link #SEALED} marker in as the tail (keeping the last
     * node in sealedTail), so that every append from here on fails its CAS and decides under the
     * lock, until an append under the lock puts a real node back (appendLocked). Waits for the
     * links of the appends still in flight, so that while sealed a node whose next is null is the
     * last (casTail's sealed branch relies on it). Nothing to do for an empty or sealed queue.
     */
    @GuardedBy("lock")
    void seal() {
        Acquisition t = tail;
        if (t == null || t == SEALED) {
            return;
        }
        Acquisition last = (Acquisition) TAIL.getAndSet(this, SEALED);
        for (Acquisition a = head; a != null && a != last; a = awaitNext(a)) {
            // nothing: awaitNext waits for each link still in flight
        }
        sealedTail = last;
    }

    /**
     * After the state word and the queue are final: writes each settled node's
     * state: FAILED if it keeps a failure, CANCELLED if it declined (marked by {@code prev == a},
     * which this clears), else GRANTED. Last, so that whoever sees a node settled (isGranted, a
     * lock-free cancel() returning false) also sees the word and the queue as that settlement
     * left them.
     */
    @GuardedBy("lock")
    static void publishOutcomes(Acquisition chain) {
        for (Acquisition a = chain; a != null; a = a.next) {
            Acquisition mark = a.prev;
            a.prev = null;
            a.state = mark == CLAIM_PENDING ? Acquisition.CLAIMING : outcome(a, mark != a && a.failureCause() == null);
        }
    }

    /**
     * The {@code prev} of a node granted provisionally in handOut whose claim runs after the
     * unlock, until publishOutcomes reads it (see "Claims after the lock" in HandoffCore). Never
     * queued nor woken.
     */
    static final Acquisition CLAIM_PENDING = new Acquisition() {
        @Override
        protected void wake() {
            throw new AssertionError("the CLAIM_PENDING marker is never woken");
        }
    };

    /**
     * For a node whose claim runs after the unlock, at its provisional grant: runs the face's
     * bookkeeping now, under the lock (a declining claim undoes it, see {@link ProvisionalGrants.GrantUndo}). If it
     * throws, the node fails (its waiter is woken with the exception) and is not granted.
     */
    @GuardedBy("lock")
    static boolean runGrantHook(Acquisition a) {
        try {
            Runnable hook = a.grantHook();
            if (hook != null) {
                hook.run();
            }
            return true;
        } catch (Throwable t) {
            a.fail(t);
            return false;
        }
    }

    /**
     * Asks the node whether it takes the grant, then runs the face's bookkeeping.
     * If either throws, the node fails: the exception is kept for its waiter, which is woken (so
     * a blocking caller throws it, a future fails with it, a coroutine resumes with it) and the
     * permits go on as for a decline. Never a silent hang, never a false grant.
     */
    @GuardedBy("lock")
    static boolean claimUnderLock(Acquisition a) {
        try {
            if (!a.claim()) {
                return false;
            }
        } catch (Throwable t) {
            a.fail(t);
            return false;
        }
        return runGrantHook(a);
    }

    /** The state a node settled by a claim is published with, given whether the claim took the grant. */
    static int outcome(Acquisition a, boolean taken) {
        if (taken) {
            return a.claimsInFront ? Acquisition.CLAIMING : Acquisition.GRANTED; // see claimsInFront
        }
        return a.failureCause() != null ? Acquisition.FAILED : Acquisition.CANCELLED;
    }

    /**
     * In a close: takes the whole queue away from appenders and returns its last node (null for
     * an empty queue): appenders then queue under the lock and find the core closed. A sealed
     * tail stays sealed (no lock-free appender is left).
     */
    @GuardedBy("lock")
    Acquisition detachTailLocked() {
        if (tail == SEALED) {
            Acquisition last = sealedTail;
            sealedTail = null;
            return last;
        }
        return (Acquisition) TAIL.getAndSet(this, null);
    }

    WaitQueue(long capacity, long maxQueuedPermits, int maxQueueLength, @Nullable WaitListener listener) {
        super(capacity);
        this.maxQueuedPermits = maxQueuedPermits;
        this.maxQueueLength = maxQueueLength;
        this.listener = listener;
        this.bounded = maxQueuedPermits != Long.MAX_VALUE || maxQueueLength != Integer.MAX_VALUE;
    }

    // ------------------------------------------------------------------ VarHandle mechanics

    private static final VarHandle REMOVED_COUNT;
    private static final VarHandle REMOVED_LO;
    private static final VarHandle QUEUED_HI;
    private static final VarHandle TAIL;
    private static final VarHandle NEXT;
    private static final VarHandle PREV;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            REMOVED_COUNT = l.findVarHandle(WaitQueue.class, "removedCount", int.class);
            REMOVED_LO = l.findVarHandle(WaitQueue.class, "removedLo", long.class);
            QUEUED_HI = l.findVarHandle(WaitQueue.class, "queuedHi", long.class);
            TAIL = l.findVarHandle(WaitQueue.class, "tail", Acquisition.class);
            NEXT = l.findVarHandle(Acquisition.class, "next", Acquisition.class);
            PREV = l.findVarHandle(Acquisition.class, "prev", Acquisition.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
