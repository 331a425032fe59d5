// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * The order in which one release wakes the waiters it grants: a thread parked in a blocking
 * acquire is unparked before any user waker of the same release runs, as {@link Waker} promises,
 * so a waker that waits for such a thread cannot deadlock the release.
 */
class WakeOrderTest {

    /** Waits until {@code t} is parked in a blocking acquire on {@code s} (the core is its blocker). */
    private static void awaitParkedInAcquire(Thread t, Semaphore s) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!(t.getState() == Thread.State.WAITING && LockSupport.getBlocker(t) == s.core())) {
            assertTrue(System.nanoTime() < deadline, "never parked in acquireBlocking: " + t.getState());
            Thread.sleep(1);
        }
    }

    /**
     * A callback queued before a blocked thread; one release grants both, and the callback waits
     * for the blocked thread to return. Woken in grant order, the callback would wait for a thread
     * that is unparked only after it returns (the review saw the release return after the
     * callback's own timeout; without one, a deadlock).
     */
    @Test
    void aThreadParkedInABlockingAcquireIsUnparkedBeforeTheCallbacksOfTheSameRelease() throws Exception {
        for (Semaphore s : new Semaphore[] {
            new Semaphore(2), Semaphore.builder(2).maxQueueLength(100).build()
        }) {
            assertTrue(s.tryAcquire(2));
            CountDownLatch blockedReturned = new CountDownLatch(1);
            AtomicBoolean callbackSawIt = new AtomicBoolean();
            Acquisition callback = s.acquireThen(1, () -> {
                try {
                    callbackSawIt.set(blockedReturned.await(30, TimeUnit.SECONDS));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread blocked = new Thread(() -> {
                try {
                    s.acquireBlocking(1);
                    blockedReturned.countDown();
                } catch (Throwable e) {
                    failure.set(e);
                }
            });
            blocked.setDaemon(true);
            blocked.start();
            awaitParkedInAcquire(blocked, s);
            assertEquals(2, s.queueLength());

            s.release(2); // grants the callback, then the blocked thread

            assertTrue(callbackSawIt.get(), "the callback ran before the blocked thread was unparked");
            blocked.join(10_000);
            assertFalse(blocked.isAlive());
            assertEquals(null, failure.get());
            assertTrue(callback.isGranted());
            s.release(2);
            assertEquals(2, s.availablePermits());
        }
    }
}
