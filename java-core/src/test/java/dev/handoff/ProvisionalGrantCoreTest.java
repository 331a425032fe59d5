// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Provisional grants through the public subclass API ({@link Acquisition#provisionalGrant()},
 * {@link Acquisition#confirmGrant()}, {@link Acquisition#undoGrant}): the test plays the adapter and
 * decides when a grant is confirmed or undone. A release by a caller that holds nothing of it,
 * which could only pass by counting permits still on their way, waits for that decision; an
 * undone grant counts as never made, also for RwLock's write flag.
 */
@Timeout(60) // a guard against hangs, not a speed check
class ProvisionalGrantCoreTest {

    /** The releases these tests watch wait until the test decides, however loaded the machine. */
    @BeforeEach
    void waitForTheTestsDecision() {
        ProvisionalGrants.transitWaitNanos = TimeUnit.SECONDS.toNanos(30);
        ProvisionalGrants.transitStallNanos = TimeUnit.SECONDS.toNanos(30);
    }

    @AfterEach
    void restoreTheBounds() {
        ProvisionalGrants.transitWaitNanos = ProvisionalGrants.TRANSIT_WAIT_NANOS;
        ProvisionalGrants.transitStallNanos = ProvisionalGrants.TRANSIT_STALL_NANOS;
    }

    /** A queued node whose grants stay provisional until the test confirms or undoes them. */
    private static final class ProvisionalNode extends Acquisition {
        @Override
        protected boolean provisionalGrant() {
            return true;
        }

        @Override
        protected void wake() {
            // neither confirms nor undoes: the test decides
        }

        boolean undo() {
            return undoGrant(Runnable::run);
        }

        void confirm() {
            confirmGrant();
        }
    }

    @Test
    void aReleaseThatNeedsProvisionalPermitsWaitsAndFailsOnceTheGrantIsUndone() throws Exception {
        Semaphore s = new Semaphore(3);
        assertTrue(s.tryAcquire(3));
        ProvisionalNode node = s.startAcquisition(2, new ProvisionalNode());
        s.release(2); // grants the node, provisionally: 1 is still held by the caller
        assertTrue(node.isGranted());
        // An observer waits for a grant in transit to be decided, and this thread decides it: the
        // read can only end by the bound (the long one: no wake-up is handed off), as it would had
        // the decider stalled; shortened here to the short one's length.
        restoreTheBounds();
        ProvisionalGrants.transitStallNanos = ProvisionalGrants.TRANSIT_WAIT_NANOS;
        assertEquals(0, s.availablePermits());
        waitForTheTestsDecision();
        s.release(1); // what the caller holds passes at once
        CompletableFuture<Object> overRelease = WaitingCall.start(s.core(), () -> s.release(2));
        assertTrue(node.undo());
        assertTrue(
                overRelease.get(30, TimeUnit.SECONDS) instanceof IllegalStateException, "never held: an over-release");
        assertEquals(3, s.availablePermits(), "the undone grant's permits went back, and nothing else changed");
        assertFalse(node.undo(), "once");
    }

    @Test
    void aReleaseThatNeedsProvisionalPermitsWaitsAndPassesOnceTheGrantIsConfirmed() throws Exception {
        Semaphore s = new Semaphore(3);
        assertTrue(s.tryAcquire(3));
        ProvisionalNode node = s.startAcquisition(2, new ProvisionalNode());
        s.release(2);
        CompletableFuture<Object> release = WaitingCall.start(s.core(), () -> s.release(3)); // 1 held + the node's 2
        node.confirm();
        assertNull(release.get(30, TimeUnit.SECONDS), "the node held its permits: released on its behalf");
        assertEquals(3, s.availablePermits());
        assertFalse(node.undo(), "a confirmed grant is not undone: its holder releases it");
    }

    @Test
    void theConfirmationThatEmptiesTransitLeavesReleasesLockFree() {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        ProvisionalNode node = s.startAcquisition(1, new ProvisionalNode());
        s.release(1);
        FifoCore core = s.core();
        assertTrue((core.word() & StateWord.GATED) != 0, "a grant in transit: releases decide under the lock");
        node.confirm();
        assertEquals(0, core.word() & StateWord.GATED, "nothing left in transit: GATED cleared by the confirmation");
        s.release(2);
        assertEquals(2, s.availablePermits());
    }

    /**
     * The race that the stamp of a provisional grant closes: a confirmation reads the word (GATED,
     * nothing in transit), then a section queues a node and grants it provisionally, ending with
     * the word as it was but for the stamp; the confirmation's CAS must fail, or GATED would be
     * cleared while that grant is in transit, and a release of its permits by a caller that holds
     * none would pass lock-free. Played step by step with the confirmation's two halves.
     */
    @Test
    void aConfirmationKeepsTheGateOfAGrantMadeAfterItReadTheWord() throws Exception {
        Semaphore s = new Semaphore(2);
        FifoCore core = s.core();
        assertTrue(s.tryAcquire(2));
        ProvisionalNode undone = s.startAcquisition(1, new ProvisionalNode());
        s.release(1);
        assertTrue(undone.undo()); // transit 0, GATED left set (cleared lazily), 1 free
        assertTrue(s.tryAcquire(1)); // 2 held, 0 free: the word the confirmation reads
        long read = core.gateToClear();
        assertTrue(read != 0L, "GATED with nothing in transit: a confirmation would clear it");
        ProvisionalNode late = s.startAcquisition(1, new ProvisionalNode());
        s.release(1); // grants it provisionally; the queue empties, 0 free again
        assertEquals(read & ~StateWord.STAMP_MASK, core.word() & ~StateWord.STAMP_MASK, "the same word but the stamp");
        assertFalse(core.clearGate(read), "the grant in transit advanced the stamp: the CAS fails");
        assertTrue((core.word() & StateWord.GATED) != 0);
        CompletableFuture<Object> overRelease = WaitingCall.start(core, () -> s.release(2)); // 1 held + 1 in transit
        assertTrue(late.undo());
        assertTrue(
                overRelease.get(30, TimeUnit.SECONDS) instanceof IllegalStateException, "never held: an over-release");
        assertEquals(1, s.availablePermits());
    }

    @Test
    void aGrantMadeAtOnceIsNeverProvisionalAndTheApiChecksItsArgument() {
        Semaphore s = new Semaphore(2);
        ProvisionalNode node = s.startAcquisition(2, new ProvisionalNode());
        assertTrue(node.isGranted());
        assertFalse(node.undo(), "granted inside the start, on the caller's thread");
        node.confirm(); // nothing to confirm: no effect
        assertThrows(NullPointerException.class, () -> node.undoGrant(null));
        s.release(2);
        assertEquals(2, s.availablePermits());
    }

    /**
     * A misused write unlock by a thread that does not hold the lock, racing a writer's provisional
     * grant that is then undone: the unlock fails and the lock is left as it would be had the writer
     * never been granted (until the write flag was restored blindly: write-locked with no writer,
     * for good).
     */
    @Test
    void aMisusedWriteUnlockRacingAnUndoneWriteGrantChangesNothing() throws Exception {
        misusedUnlockRacingAnUndoneWriteGrant(RwLock::writeUnlock);
        misusedUnlockRacingAnUndoneWriteGrant(RwLock::downgrade);
    }

    private static void misusedUnlockRacingAnUndoneWriteGrant(Consumer<RwLock> misused) throws Exception {
        RwLock lock = new RwLock(2);
        assertTrue(lock.tryWriteLock());
        ProvisionalNode writer = lock.startWriteLock(new ProvisionalNode());
        lock.writeUnlock(); // grants the queued writer provisionally; its grant sets the flag
        assertTrue(lock.isWriteLocked());
        CompletableFuture<Object> outcome = WaitingCall.start(lock.core(), () -> misused.accept(lock));
        assertTrue(writer.undo());
        assertTrue(outcome.get(30, TimeUnit.SECONDS) instanceof IllegalStateException);
        assertFalse(lock.isWriteLocked(), lock.toString());
        assertTrue(lock.tryWriteLock(), lock.toString());
        lock.writeUnlock();
        assertTrue(lock.tryReadLock());
        lock.readUnlock();
    }
}
