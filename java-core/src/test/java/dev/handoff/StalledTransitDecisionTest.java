// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A provisional grant whose decider is stalled on another thread (descheduled by a loaded machine,
 * or stopped by a pause) is waited for, with the production bounds: an observer that answered on
 * the short bound, meant for a confirmation only its own thread could make, gave an answer that the
 * later decision contradicted. A stress run of the model-checked semaphore on one processor found
 * it: a cancelled acquire (its grant undone) and an {@code availablePermits()} of 1 that no order of
 * the two could give.
 *
 * <p>Each test stalls the decider (the waker, on its own thread) on a latch until the observer has
 * waited well past {@link ProvisionalGrants#TRANSIT_WAIT_NANOS}, then lets it decide; the observer
 * must answer with the decision, not before it.
 */
@Timeout(60) // a guard against hangs, not a speed check
class StalledTransitDecisionTest {

    /** A waiter whose waker, on the releasing thread, stalls until the test lets it decide. */
    private static final class StalledDecider extends Acquisition {
        final CountDownLatch stall = new CountDownLatch(1);
        final CountDownLatch woken = new CountDownLatch(1);
        volatile boolean confirms;

        @Override
        protected boolean provisionalGrant() {
            return true;
        }

        @Override
        protected void wake() {
            woken.countDown();
            try {
                stall.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (confirms) {
                confirmGrant();
            } else {
                assertTrue(undoGrant(Runnable::run));
            }
        }
    }

    /**
     * Semaphore(2), both permits taken, a waiter of 1 queued; another thread releases 2, which
     * grants the waiter provisionally (1 free, 1 in transit), and its waker stalls.
     */
    private static StalledDecider stalledGrant(Semaphore s, boolean confirms) throws InterruptedException {
        assertTrue(s.tryAcquire(2));
        StalledDecider d = s.startAcquisition(1, new StalledDecider());
        d.confirms = confirms;
        Thread releaser = new Thread(() -> s.release(2), "releaser");
        releaser.setDaemon(true);
        releaser.start();
        assertTrue(d.woken.await(30, TimeUnit.SECONDS));
        assertTrue(d.isGranted());
        return d;
    }

    /**
     * Runs {@code call} on a thread, checks that it is still waiting on {@code core} well after the
     * short bound, lets {@code d} decide, and returns the call's outcome.
     */
    private static Object answerAfterTheDecision(FifoCore core, StalledDecider d, Supplier<Object> call)
            throws Exception {
        CompletableFuture<Object> outcome = WaitingCall.start(core, call);
        Thread.sleep(4 * TimeUnit.NANOSECONDS.toMillis(ProvisionalGrants.TRANSIT_WAIT_NANOS));
        assertFalse(outcome.isDone(), "answered while the decider was stalled: " + outcome.getNow(null));
        d.stall.countDown();
        return outcome.get(30, TimeUnit.SECONDS);
    }

    @Test
    void availablePermitsSeesTheStalledUndo() throws Exception {
        Semaphore s = new Semaphore(2);
        StalledDecider d = stalledGrant(s, false);
        assertEquals(2L, answerAfterTheDecision(s.core(), d, s::availablePermits), "the grant never happened");
    }

    @Test
    void tryAcquireSeesTheStalledUndo() throws Exception {
        Semaphore s = new Semaphore(2);
        StalledDecider d = stalledGrant(s, false);
        assertEquals(true, answerAfterTheDecision(s.core(), d, () -> s.tryAcquire(2)));
        assertEquals(0, s.availablePermits());
    }

    @Test
    void tryAcquireUpToSeesTheStalledUndo() throws Exception {
        Semaphore s = new Semaphore(2);
        StalledDecider d = stalledGrant(s, false);
        assertEquals(2L, answerAfterTheDecision(s.core(), d, () -> s.tryAcquireUpTo(2)));
    }

    @Test
    void aReleaseOfTheStalledGrantsPermitsPassesOnceConfirmed() throws Exception {
        Semaphore s = new Semaphore(2);
        StalledDecider d = stalledGrant(s, true);
        // Held by callers: none; in transit: the waiter's 1. It passes only if the grant is delivered.
        assertNull(answerAfterTheDecision(s.core(), d, () -> {
            s.release(1);
            return null;
        }));
        assertEquals(2, s.availablePermits());
    }

    @Test
    void aReleaseStillAnswersOnTheShortBoundWhenItsOwnExecutorHoldsTheWakeUp() throws Exception {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        StalledDecider d = s.startAcquisition(1, new StalledDecider());
        d.stall.countDown();
        d.confirms = true;
        List<Runnable> later = new ArrayList<>(); // an event loop that is this thread
        s.release(2, later::add);
        long start = System.nanoTime();
        Throwable e = null;
        try {
            s.release(1);
        } catch (IllegalStateException refused) {
            e = refused;
        }
        assertInstanceOf(IllegalStateException.class, e, "counted as never made: an over-release");
        long waited = System.nanoTime() - start;
        assertTrue(
                waited < ProvisionalGrants.TRANSIT_STALL_NANOS,
                "waited the long bound for a wake-up only this thread can run: " + waited + " ns");
        later.forEach(Runnable::run);
        s.release(1); // the waiter's, delivered
        assertEquals(2, s.availablePermits(), s.toString());
    }

    @Test
    void anObserverWaitsForAUsersSlowClaimOnlyTheShortBound() throws Exception {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        SlowWaker claim = new SlowWaker(true);
        Acquisition slow = s.acquireThen(1, claim);
        Thread releaser = ClaimOutsideLockTest.daemon(() -> s.release(2));
        assertTrue(claim.inClaim.await(30, TimeUnit.SECONDS));
        // User code decides: a slow claim stalls an observer for the short bound only, then it
        // answers with the grant counted as made.
        long start = System.nanoTime();
        assertEquals(1, s.availablePermits());
        long waited = System.nanoTime() - start;
        assertTrue(waited < ProvisionalGrants.TRANSIT_STALL_NANOS, "waited " + waited + " ns for user code");
        claim.open.countDown();
        releaser.join(30_000);
        assertTrue(slow.isGranted());
        assertEquals(1, s.availablePermits());
    }
}
