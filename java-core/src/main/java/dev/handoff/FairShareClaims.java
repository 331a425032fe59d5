// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/*
 * Claims after the lock
 * =====================
 * A user's Waker.claim() (FairShareSemaphore.acquireThen) is user code, and no user code runs
 * under the fair share's lock. Its ticket (claimsInFront) is granted for it, at once or by the
 * core, and published CLAIMING: not waiting any more (cancel() answers false; the waker hears the
 * outcome), not granted yet (isGranted() waits for the answer). Its permits count in the key's
 * transit (held by nobody, against the cap, the key kept active) and in `out`. After the lock,
 * before the listener hears and the wakers run, the section's own thread asks each CLAIMING
 * ticket of its chain, in order (settle), inside the call that made the grant, so that call
 * linearizes with the outcome: taken, the permits move from transit to held and the ticket is
 * GRANTED; declined or thrown, they go back in fair order, as a release of them would, and the
 * ticket is CANCELLED or FAILED; the tickets that give-back settles join the end of the same loop.
 *
 * Nobody sees a grant that is then declined. The observers wait while a claim is out (within the
 * short bound a release waits for grants in transit, the claim being user code; not from inside a
 * claim or a wake-up, or under the lock, where this thread may be the one to answer), so none sees
 * a ticket gone from its queue and not yet held, or permits out of the core that come back. A
 * request that finds too few permits while a claim is out waits for it the same way before it
 * queues, or tryAcquire refuses: a declined grant never happened. A release of the key's permits
 * waits as for any grant in transit.
 */

/** The users' claims of a {@link FairShareScheduler}, asked after its lock (see the notes above). */
final class FairShareClaims<K> implements ClaimChains.Settler {
    private final FairShareScheduler<K> scheduler;

    /** CLAIMING tickets whose party's claim is not answered yet. Written under the lock; read anywhere. */
    @GuardedBy("FairShareScheduler.lock")
    private volatile int out;

    FairShareClaims(FairShareScheduler<K> scheduler) {
        this.scheduler = scheduler;
    }

    /** Whether a claim is out. */
    boolean out() {
        return out > 0;
    }

    /** A ticket granted for its party's claim: its permits in the key's transit until answered. */
    @GuardedBy("FairShareScheduler.lock")
    void outLocked(FairShareTicket<K> t, @Nullable KeyState<K> k) {
        if (k != null) {
            k.transit += t.permits;
        }
        out++;
        scheduler.core.pace(1); // a release waiting for this transit keeps to the short bound
    }

    /** One claim answered, in the section that settles its ticket. */
    @GuardedBy("FairShareScheduler.lock")
    void answeredLocked() {
        out--;
        scheduler.core.pace(-1);
    }

    /**
     * How many times a call waits for claims that come out one after the other (each wait within
     * the short bound) before it answers with one out: observers, grants at once and the
     * queueing faces alike, so that a stream of claims cannot hold a call up.
     */
    static final int MAX_CLAIM_WAITS = 4;

    /**
     * An observer's read of the scheduler's guarded fields: between two equal stamps of its lock
     * (see CoreLock), with {@link #out} read in the same snapshot; if a claim was out, read again
     * once none is (a few times at most, so that a stream of claims cannot keep an observer
     * waiting; each wait within the short bound). At once inside a section of this thread.
     */
    long observe(LongSupplier read) {
        CoreLock lock = scheduler.lock;
        if (lock.heldBy(Thread.currentThread())) {
            return read.getAsLong();
        }
        for (int attempt = 0, waits = 0; ; attempt++) {
            int stamp = lock.quietStamp();
            long v = read.getAsLong();
            boolean claimOut = out > 0; // in the same snapshot: an answer may change v
            if (lock.answered(stamp, attempt)) {
                if (!claimOut || !awaitAnother(waits++)) {
                    return v;
                }
                attempt = -1;
            }
        }
    }

    /**
     * For a call that already waited {@code waited} times for claims: waits while a claim is out
     * (see {@link #await}) unless that was {@link #MAX_CLAIM_WAITS} times. Whether it waited until
     * none was out (then the caller decides again).
     */
    boolean awaitAnother(int waited) {
        return waited < MAX_CLAIM_WAITS && await();
    }

    /**
     * Waits while a claim is out, within the short bound; not from inside a claim or a wake-up, or
     * under the lock. Returns whether it waited until none was out (false: it did not wait, or
     * the bound ended the wait).
     */
    boolean await() {
        if (scheduler.lock.heldBy(Thread.currentThread())) {
            return false;
        }
        WakeRun run = WakeRun.current();
        if (run.claiming != null || run.depth != 0) {
            return false;
        }
        long since = System.nanoTime();
        for (int waits = 1; out > 0; waits++) {
            if (!FifoCore.awaitTransit(scheduler.face, waits, since, ProvisionalGrants.transitWaitNanos)) {
                return false;
            }
        }
        return true;
    }

    /**
     * After the lock, before the listener hears of {@code chain} and its wakers run: asks the
     * claim of each CLAIMING ticket, in order, and settles it; the tickets a declined claim's
     * permits settle join the end of the chain. Returns the chain.
     */
    @Nullable
    FairShareTicket<K> settle(@Nullable FairShareTicket<K> chain) {
        if (!ClaimChains.anyClaiming(chain)) {
            return chain; // the common case: nothing to ask
        }
        return FairShareTicket.of(ClaimChains.settleInOrder(chain, this));
    }

    /** Asks one CLAIMING ticket's party and settles it (see ClaimChains). */
    @Override
    public @Nullable Acquisition settleClaim(Acquisition claiming) {
        FairShareTicket<K> t = FairShareTicket.of(claiming);
        return scheduler.settleClaimed(t, ask(t));
    }

    /** The party's claim, without the lock; a throw fails the ticket. */
    private static boolean ask(FairShareTicket<?> t) {
        WakeRun run = WakeRun.current();
        Acquisition outer = run.claiming; // a claim that calls the fair share may run another claim nested
        run.claiming = t;
        try {
            return t.claimOfParty();
        } catch (Throwable e) {
            t.fail(e); // the ticket is ours alone until its state is published
            return false;
        } finally {
            run.claiming = outer;
        }
    }
}
