// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.Executor;
import org.jspecify.annotations.Nullable;

/**
 * Provisional grants: permits granted to a waiter whose delivery can still be undone (a
 * coroutine cancelled after its grant), counted in transit until confirmed or undone.
 *
 * <pre>
 * Provisional grants
 * ------------------
 * A coroutine (kotlin-ext, public kotlinx API only) may be cancelled after claim() accepted its
 * grant and before its waker resumes it; its permits then go back. Until the waker confirms the
 * grant (Acquisition.confirmGrant, just before it resumes or dispatches the coroutine) or the
 * cancellation undoes it (undoGrant), a grant to a node that asks for it (provisionalGrant) is
 * provisional: its permits are counted in transit, held by nobody. undo gives them back exactly,
 * as a release of them would, and the grant counts as never made. While transit > 0, GATED is set,
 * so every release decides under the lock, where held = capacity + debt - free - headAssigned -
 * transit. A release that would pass only if the permits in transit were counted (an over-release
 * unless the grant is delivered) waits until transit changes and decides again: answering either
 * way at once would be wrong for one of the two outcomes (granted: it passes; undone: it fails),
 * and both are decided within the waker's or the cancellation's own run, normally on another
 * thread. The waiting thread first runs the wake-ups it queued itself (nested too deeply), which
 * may be the confirmations; a confirmation it can never see (a wake-up it handed to an executor
 * that runs on this same thread) bounds the wait: after TRANSIT_WAIT_NANOS it decides once more
 * with the grants in transit counted as not made yet, which is an over-release, nothing changed.
 * That short bound applies only where this thread may be the one to decide, or the decision is
 * user code: inside a wake-up (a later wake-up of its own run may be the confirmation), while a
 * wake-up of this core is handed to an executor or queued by another thread's trampoline and has
 * not run (the executor may be this thread's own loop), or while a user's claim is not answered
 * (userPaced > 0 for the last two). Otherwise the decider is a coroutine's waker already running
 * on another thread, or its cancellation, a few instructions from the answer, and the wait is
 * bounded by TRANSIT_STALL_NANOS only: a machine that deschedules that thread for 50 ms, or a
 * pause of the whole JVM, must not turn into an answer that the decision then contradicts (a
 * stress run on one processor found an availablePermits() of 1 beside a cancelled acquire whose
 * grant was undone). The long bound remains for what the core cannot see: a wake-up queued on
 * another thread behind a user waker that blocks until this thread acts.
 * availablePermits() and a tryAcquire that finds too few free permits, while nobody waits, wait
 * the same way (not inside a wake-up, where the confirmation may be a later wake-up of the same
 * run), so that they see the grant confirmed or undone, never a grant that is then taken back.
 * Other observers (the queue's length and weight, with waiters behind the provisional grant) may
 * see it; the user guide's semantics page says so.
 * A release of permits a caller really holds never waits: those are never in transit. confirm is
 * one atomic add without the lock; the confirmation that empties transit clears GATED with one
 * CAS if nothing else keeps it set (transitEmptied in CapacityControl: why no new grant can slip
 * in between is told there), so the release that follows stays lock-free; if that CAS loses a
 * race, the next release under the lock that finds no reason left clears it (clearStaleGate).
 * Grants made at once inside enqueue are never provisional: the caller's own thread has them.
 * </pre>
 */
abstract class ProvisionalGrants extends WaitQueue implements ClaimChains.Settler {

    /**
     * Permits granted provisionally and not yet confirmed or undone (see "Provisional grants"):
     * held by nobody yet. Added to under the lock at the grant; taken from by confirm without it.
     */
    volatile long transit;

    /**
     * Grants made at once inside enqueue whose waker's claim has not answered yet (see "Claims after
     * the lock" in HandoffCore): an acquirer that finds too few free permits while nobody is queued
     * waits for them before it queues, since a declined one never happened. Incremented under the
     * lock, decremented by settleClaim once the outcome is in the word.
     */
    volatile int claimsAtOnce;

    /** The {@code prev} of a node granted at once while its claim is out (see {@link #claimsAtOnce}). */
    static final Acquisition CLAIM_AT_ONCE = new Acquisition() {
        @Override
        protected void wake() {
            throw new AssertionError("the CLAIM_AT_ONCE marker is never woken");
        }
    };

    /**
     * The scheduler in front of this core, or {@code null} (every face but the fair share): final,
     * set at construction. Read by {@link #cancel(Acquisition, Executor, boolean)}, and by
     * {@link #confirm} and {@link #undo} for a grant that is not this core's own.
     */
    final Front front;

    /**
     * A scheduler that keeps waiting nodes in queues of its own and hands them to this core one at
     * a time (FairShareSemaphore). Its nodes are bound to this core from their creation, so that
     * their handles work, but only the one it hands over is in this core's queue: a cancel of any
     * of them goes to the front, which withdraws a handed-over node through
     * {@link #cancelQueued(Acquisition, Executor, boolean)}.
     */
    interface Front {
        /** {@link Acquisition#cancel()} of one of the front's nodes; as {@link #cancel(Acquisition, Executor, boolean)}. */
        boolean cancel(Acquisition a, Executor wakes, boolean timedOut);

        /**
         * {@link Acquisition#confirmGrant()} of an acquisition the front started (its provisional
         * grants are the front's, per key, not this core's: see {@link #confirm(Acquisition)}).
         */
        void confirm(Acquisition a);

        /** {@link Acquisition#undoGrant(Executor)} of an acquisition the front started; as {@link #undo}. */
        boolean undo(Acquisition a, Executor wakes);
    }

    /**
     * Whether an observer of the free count that read {@code s} waits for provisional grants to be
     * confirmed or undone first (see "Provisional grants"): while nobody waits, an undone grant's
     * permits come back to free, so a count read before would show a grant that never happened.
     * GATED alone says a grant may be in transit; {@link #afterTransit} reads the count and the word
     * together. Not inside a wake-up (the confirmation may be a later wake-up of the same run):
     * there the count is read as it is.
     */
    boolean decidesAfterTransit(long s) {
        return (s & (GATED | QUEUED)) == GATED && WakeRun.current().depth == 0; // closed too: the count stays
    }

    /**
     * The word once no provisional grant is in transit, or someone waits again (then free is 0
     * whatever they become), or after the bound of {@link #awaitTransit}. The word and
     * {@link #transit} are read together, while no lock holder is inside (see "Observers" in
     * CoreLock): a grant enters transit and an undone one leaves it under the lock, in the same
     * section as the word's change, so a pair read apart could show a grant's permits gone from
     * the word with nothing in transit, or the reverse.
     */
    long afterTransit() {
        long since = System.nanoTime();
        for (int waits = 1; ; waits++) {
            long s;
            long t;
            for (int attempt = 0; ; attempt++) {
                int stamp = lock.quietStamp();
                s = word();
                t = transit;
                if (lock.answered(stamp, attempt)) {
                    break;
                }
            }
            if ((s & QUEUED) != 0 || t == 0) {
                return s;
            }
            if (!awaitTransit(this, waits, since, transitBound())) {
                return word();
            }
        }
    }

    /**
     * For a tryAcquire that finds too few free permits while a grant may be in transit (see
     * "Provisional grants"): the word once the grants in transit are decided ({@link #afterTransit})
     * if the call's first such wait began at {@code firstWaitNanos} less than
     * {@link #transitBound()} ago, else {@code s}. The caller decides again on a different word, as
     * long as new grants keep coming within that bound.
     */
    long settledWithinBound(long s, long firstWaitNanos) {
        return System.nanoTime() - firstWaitNanos < transitBound() ? afterTransit() : s;
    }

    /**
     * How long a release waits for provisional grants to settle before it answers as an
     * over-release (see {@link #awaitTransit}).
     */
    static final long TRANSIT_WAIT_NANOS = 50_000_000L;

    /**
     * How long the waits for provisional grants go on while no user's claim is out, no wake-up of
     * this core waits for an executor or a trampoline, and the caller is not inside a wake-up (see
     * "Provisional grants"):
     * the decider is running elsewhere, and only a thread stalled this long, or a user waker
     * blocked on the caller, ends the wait with an answer the decision may contradict.
     */
    static final long TRANSIT_STALL_NANOS = 1_000_000_000L;

    /**
     * The bound in force, {@link #TRANSIT_WAIT_NANOS}: tests that watch a release wait raise it,
     * so that a loaded machine cannot end the wait before they see it.
     */
    static volatile long transitWaitNanos = TRANSIT_WAIT_NANOS;

    /** The long bound in force, {@link #TRANSIT_STALL_NANOS}: raised by the same tests. */
    static volatile long transitStallNanos = TRANSIT_STALL_NANOS;

    /**
     * Decisions of this core that wait for code it does not pace (see "Provisional grants"): a
     * user's claim not answered yet (see "Claims after the lock" in HandoffCore), and wake-ups of
     * settled nodes handed to an executor or queued by a thread's trampoline, not run yet (counted
     * by {@link WakeRun}). While any is out, a wait for grants in transit keeps to the short bound:
     * the decision may be slow user code, or this very thread's to run. A task its executor drops
     * keeps it above 0, which only shortens the waits.
     */
    volatile int userPaced;

    /** {@link #userPaced} += {@code n} (negative once the claim is answered, or the wake-up runs). */
    final void pace(int n) {
        USER_PACED.getAndAdd(this, n);
    }

    /**
     * The bound of a wait for provisional grants (see "Provisional grants"): the short one if this
     * thread may be the one to decide them, else the long one.
     */
    final long transitBound() {
        return userPaced != 0 || WakeRun.current().depth != 0 ? transitWaitNanos : transitStallNanos;
    }

    /**
     * One wait of a release for provisional grants to settle (see "Provisional grants"): they are
     * settled by the waking of the release that made them, or by their waiter's cancellation,
     * within a few instructions unless those threads are descheduled. A wake-up that this very
     * thread queued (nested too deeply, see the trampoline) could only run after this release
     * returns, so the queued ones run first, here. Waits as {@link ShortWait} does, parked on
     * {@code blocker} (this core, or the fair share whose per-key grants are in transit). Returns
     * false once the wait began {@code boundNanos} ago ({@link #transitBound()}, or the short bound
     * where the answer only shapes the queue's order): a confirmation that only this thread could
     * make (a wake-up it handed to an executor that runs on this thread) would never come, so the
     * caller answers without counting the grants in transit, as if they had not been made yet — an
     * over-release, nothing changed — instead of waiting for itself.
     */
    static boolean awaitTransit(Object blocker, int waits, long sinceNanos, long boundNanos) {
        if (waits == 1) {
            WakeRun.runDeferred(); // (it drains what they queue in turn; nothing else queues here meanwhile)
        }
        if (ShortWait.parks(waits) && System.nanoTime() - sinceNanos >= boundNanos) {
            return false;
        }
        ShortWait.pause(blocker, waits, APPEND_PARK_NANOS);
        return true;
    }

    /** Whether {@code h} asks for a provisional grant; one that throws does not. */
    @GuardedBy("lock")
    static boolean asksProvisional(Acquisition h) {
        try {
            return h.provisionalGrant();
        } catch (Throwable t) {
            return false;
        }
    }

    /**
     * For a node just granted whose face asked for a provisional grant: counts its
     * permits in transit (held by nobody) until confirm or undo, and sets GATED so that releases
     * decide under the lock meanwhile (see "Provisional grants").
     */
    @GuardedBy("lock")
    void holdProvisionally(Acquisition h) {
        enterTransit(h);
        gateWithNewStamp(); // the new stamp: see transitEmptied
    }

    /**
     * Counts the permits of {@code a} in transit. Before the word shows them gone from free (a grant
     * at once), so that an observer that reads the word and then {@link #transit} sees them.
     */
    @GuardedBy("lock")
    void enterTransit(Acquisition a) {
        PROVISIONAL.setRelease(a, true);
        TRANSIT.getAndAdd(this, a.permits);
    }

    /** Undoes {@link #enterTransit}: after the permits are back in the word, for the same reason. */
    @GuardedBy("lock")
    void leaveTransit(Acquisition a) {
        PROVISIONAL.setRelease(a, false);
        TRANSIT.getAndAdd(this, -a.permits);
    }

    /**
     * {@link Acquisition#confirmGrant()}: the grant of {@code a}, if still provisional, now counts as
     * held by its waiter. Lock-free; GATED is cleared later, by a release under the lock.
     */
    void confirm(Acquisition a) {
        // A read first: a grant made at once (a wake inside the start) was never provisional, and a
        // failing CAS costs a locked instruction on the coroutine's path for nothing.
        if (a.provisional) {
            if (PROVISIONAL.compareAndSet(a, true, false)) {
                leaveTransitConfirmed(a);
            }
        } else if (front != null) {
            front.confirm(a); // a fair share keeps its provisional grants per key
        }
    }

    /**
     * The provisional grant of {@code a}, just confirmed (its flag cleared by this thread), leaves
     * transit without the lock; the confirmation that empties transit also clears a GATED that
     * nothing else keeps set ({@link #transitEmptied}), so the next release is lock-free.
     */
    private void leaveTransitConfirmed(Acquisition a) {
        long n = a.permits;
        if ((long) TRANSIT.getAndAdd(this, -n) == n) {
            transitEmptied();
        }
    }

    /**
     * {@link Acquisition#undoGrant(Executor)}: if the grant of {@code a} is still provisional, gives
     * its permits back as a release would (the face's grant bookkeeping undone first, see
     * {@link GrantUndo}), without an over-release check since they are exactly that grant's; the
     * wake-ups it causes run on {@code wakes}. Returns false (nothing done) if the grant was
     * confirmed, or was not provisional.
     */
    boolean undo(Acquisition a, Executor wakes) {
        if (!a.provisional) {
            return front != null && front.undo(a, wakes); // a fair share keeps its provisional grants per key
        }
        Acquisition woken;
        lock();
        try {
            if (!PROVISIONAL.compareAndSet(a, true, false)) {
                return false;
            }
            long n = a.permits;
            Runnable hook = a.grantHook();
            if (hook instanceof GrantUndo) {
                ((GrantUndo) hook).undo();
            }
            woken = giveBackLocked(n);
            TRANSIT.getAndAdd(this, -n); // after the permits are back: see enterTransit
        } finally {
            unlock();
        }
        afterGiveBack(woken, wakes);
        return true;
    }

    /**
     * After the lock is released, before the listener hears of {@code chain} and its wakers run:
     * asks the claim of each node granted before its claim (CLAIMING, see "Claims after the lock"
     * in HandoffCore), in FIFO order, and settles it: a claim that takes the grant confirms it
     * (lock-free); one that declines or throws undoes it under the lock, which gives the permits
     * to the next waiters, whose nodes join the end of the chain (their own claims run here too,
     * so a run of declines is a loop, not a recursion). Returns the chain with every node settled.
     */
    final Acquisition settleClaims(Acquisition chain) {
        if (front != null) {
            return chain; // a front's nodes: their claims are the front's (see Acquisition.claimsInFront)
        }
        if (!ClaimChains.anyClaiming(chain)) {
            return chain; // the common case: nothing to ask
        }
        Acquisition settled = ClaimChains.settleInOrder(chain, this);
        checkDrained(); // permits a claim declined came back: close's future may be due (else a read)
        return settled;
    }

    /**
     * Asks the claim of one CLAIMING node, without the lock, and settles it. Returns the chain
     * of nodes that an undone grant's permits settled (null if none).
     */
    @Override
    public final @Nullable Acquisition settleClaim(Acquisition a) {
        Runnable hook = a.grantHook(); // before a failing claim packs its exception with it
        boolean taken;
        WakeRun run = WakeRun.current();
        Acquisition outer = run.claiming; // a claim that releases may run another claim nested
        run.claiming = a;
        try {
            taken = a.claim();
        } catch (Throwable t) {
            a.fail(t); // the node is ours alone until its state is published
            taken = false;
        } finally {
            run.claiming = outer;
        }
        boolean atOnce = a.prev == CLAIM_AT_ONCE;
        a.prev = null;
        pace(-1); // answered
        if (taken) {
            if (a.provisional && PROVISIONAL.compareAndSet(a, true, false)) {
                leaveTransitConfirmed(a);
            }
            if (atOnce) {
                CLAIMS_AT_ONCE.getAndAdd(this, -1);
            }
            a.state = Acquisition.GRANTED; // after transit: whoever sees it granted sees it held
            return null;
        }
        Acquisition woken = null;
        lock();
        try {
            if (PROVISIONAL.compareAndSet(a, true, false)) {
                long n = a.permits;
                if (hook instanceof GrantUndo) {
                    ((GrantUndo) hook).undo();
                }
                woken = giveBackLocked(n);
                TRANSIT.getAndAdd(this, -n); // after the permits are back: see enterTransit
            }
            if (atOnce) {
                CLAIMS_AT_ONCE.getAndAdd(this, -1); // after the permits are back
            }
            a.state = outcome(a, false); // last, as in publishOutcomes
        } finally {
            unlock();
        }
        return woken;
    }

    /** A face's grant bookkeeping that a provisional grant undone must reverse (the RwLock write flag). */
    interface GrantUndo extends Runnable {
        /** Reverses {@link #run()}. */
        @GuardedBy("lock")
        void undo();
    }

    /** The permits {@code rem} come back; see {@link HandoffCore}. */
    @GuardedBy("lock")
    abstract Acquisition giveBack(long rem);

    /** Clears GATED if nothing keeps it set; see {@link CapacityControl}. */
    @GuardedBy("lock")
    abstract void clearStaleGate();

    /** After a confirmation emptied transit: clears GATED without the lock if nothing else keeps it; see {@link CapacityControl}. */
    abstract void transitEmptied();

    /** Completes the drain future of a closed core once every permit is back; see {@link CapacityControl}. */
    abstract void checkDrained();

    /** Tells the listener of a settled chain and wakes it on {@code wakes}, after the lock is released. */
    abstract void settleAll(Acquisition chain, Executor wakes);

    /**
     * {@code n} permits come back (a release, an undone grant): to the debt, the queue or free,
     * and the gate is cleared if nothing keeps it set. Returns the chain of nodes settled, for
     * {@link #afterGiveBack}.
     */
    @GuardedBy("lock")
    final Acquisition giveBackLocked(long n) {
        Acquisition woken = giveBack(n);
        clearStaleGate();
        return woken;
    }

    /** After the lock is released: settles what {@link #giveBackLocked} woke, and completes a drain. */
    final void afterGiveBack(Acquisition woken, Executor wakes) {
        settleAll(woken, wakes);
        checkDrained();
    }

    ProvisionalGrants(
            long capacity,
            long maxQueuedPermits,
            int maxQueueLength,
            @Nullable WaitListener listener,
            @Nullable Front front) {
        super(capacity, maxQueuedPermits, maxQueueLength, listener);
        this.front = front;
    }

    // ------------------------------------------------------------------ VarHandle mechanics

    private static final VarHandle TRANSIT;
    static final VarHandle CLAIMS_AT_ONCE;
    private static final VarHandle PROVISIONAL;
    private static final VarHandle USER_PACED;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            TRANSIT = l.findVarHandle(ProvisionalGrants.class, "transit", long.class);
            CLAIMS_AT_ONCE = l.findVarHandle(ProvisionalGrants.class, "claimsAtOnce", int.class);
            PROVISIONAL = l.findVarHandle(Acquisition.class, "provisional", boolean.class);
            USER_PACED = l.findVarHandle(ProvisionalGrants.class, "userPaced", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
