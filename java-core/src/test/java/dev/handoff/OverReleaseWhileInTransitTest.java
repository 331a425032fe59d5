// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A release that would pass only if a provisional grant is delivered waits for that grant to be
 * confirmed or undone. When the confirmation can only come from the releasing thread itself (its
 * wake-up was queued on this thread, or handed to an executor that runs on it), the release must
 * not wait for itself: queued wake-ups run first, and an executor's is bounded, after which the
 * release is an over-release and nothing changes.
 */
@Timeout(value = 10, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a hang fails, not a speed check
class OverReleaseWhileInTransitTest {

    /** A party that asks for a provisional grant and confirms it when woken, as the coroutine adapter does. */
    private static final class Provisional extends Acquisition {
        int wakes;

        @Override
        protected boolean provisionalGrant() {
            return true;
        }

        @Override
        protected void wake() {
            wakes++;
            confirmGrant();
        }
    }

    @Test
    void aConfirmationHandedToThisThreadsExecutorBoundsTheWait() {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        Provisional p = s.startAcquisition(1, new Provisional());
        List<Runnable> later = new ArrayList<>(); // an event loop that is this thread
        s.release(1, later::add); // p granted provisionally; its wake-up waits in `later`
        assertTrue(p.isGranted());
        assertEquals(0, p.wakes);

        IllegalStateException e = assertThrows(IllegalStateException.class, () -> s.release(2));
        assertTrue(e.getMessage().startsWith("release(2): exceeds the 1 permits held"), e.getMessage());

        later.forEach(Runnable::run); // the loop goes on: p confirms
        assertEquals(1, p.wakes);
        s.release(1); // p's
        s.release(1); // the caller's own
        assertEquals(2, s.availablePermits(), s.toString());
    }

    @Test
    void aConfirmationQueuedOnThisThreadRunsBeforeTheReleaseDecides() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        // A chain of wakers, each passing its permit on, deep enough that the last grant's wake-up
        // is queued on this thread (the trampoline) rather than run at once.
        int depth = WakeRun.MAX_NESTED_WAKES;
        AtomicReference<Throwable> secondRelease = new AtomicReference<>();
        List<Acquisition> chain = new ArrayList<>();
        for (int i = 1; i <= depth; i++) {
            boolean last = i == depth;
            chain.add(s.acquireThen(1, () -> {
                s.release(1); // passes the permit on
                if (last) {
                    try {
                        s.release(1); // counts only if the provisional grant just made is confirmed
                    } catch (Throwable t) {
                        secondRelease.set(t);
                    }
                }
            }));
        }
        Provisional p = s.startAcquisition(1, new Provisional());
        s.release(1);
        assertTrue(chain.stream().allMatch(Acquisition::isGranted));
        assertEquals(1, p.wakes, "the queued wake-up ran, and confirmed");
        assertNull(secondRelease.get()); // the grant was delivered: the permit was p's to give back
        assertTrue(p.isGranted());
        assertEquals(1, s.availablePermits(), s.toString());
        assertFalse(s.tryAcquire(2));
    }

    @Test
    void aFairShareReleaseDoesNotWaitForItsOwnExecutor() throws Exception {
        FairShareSemaphore<String> f = FairShareSemaphore.<String>builder(2).build();
        assertTrue(f.tryAcquire("a", 2));
        Provisional p = f.startAcquisition("a", 1, new Provisional());
        List<Runnable> later = new ArrayList<>();
        f.release("a", 1, later::add);
        assertTrue(p.isGranted());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> f.release("a", 2));
        assertTrue(e.getMessage().startsWith("release(a, 2): exceeds the 1 permits held"), e.getMessage());
        later.forEach(Runnable::run);
        assertEquals(1, p.wakes);
        f.release("a", 2);
        assertEquals(2, f.availablePermits());
    }
}
