// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * No permanent cliffs: a semaphore that was resized, or has a listener or a queue bound, keeps
 * the lock-free paths (release while nobody waits, appending behind other waiters), and the
 * queue's weight never overflows. Each lock-free path is shown by running it while another
 * thread holds the core's internal lock (inside a callback that blocks there, which the Waker and
 * Acquisition contracts forbid; used here only to hold the lock): a call that needed the lock
 * could not return until the lock is let go, so each call must finish first. The waits are hang
 * detectors (30 s), not speed checks.
 */
class NoCliffTest {

    private static final long HANG_SECONDS = 30;

    /** How long a blocked callback holds the lock at most: longer than a hang detector waits. */
    private static final long HOLD_SECONDS = 4 * HANG_SECONDS;

    /** A started acquisition whose callName() (asked under the lock, when it is refused) blocks. */
    private static final class BlockingName extends Acquisition {
        final CountDownLatch inside = new CountDownLatch(1);
        final CountDownLatch open = new CountDownLatch(1);

        @Override
        protected String callName() {
            inside.countDown();
            try {
                open.await(HOLD_SECONDS, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return null;
        }

        @Override
        protected void wake() {}
    }

    /** A waker whose claim() holds the lock until {@code open}. */
    private static final class SlowClaim implements Waker {
        final CountDownLatch inside = new CountDownLatch(1);
        final CountDownLatch open = new CountDownLatch(1);

        @Override
        public boolean claim() {
            inside.countDown();
            try {
                return open.await(HOLD_SECONDS, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }

        @Override
        public void wake() {}
    }

    private static Thread daemon(Runnable body) {
        Thread t = new Thread(body);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** Runs {@code call} on another thread and returns its result, which must come while the lock is held. */
    private static <T> T whileLockHeld(String what, Supplier<T> call) throws Exception {
        CompletableFuture<T> result = new CompletableFuture<>();
        daemon(() -> {
            try {
                result.complete(call.get());
            } catch (Throwable e) {
                result.completeExceptionally(e);
            }
        });
        try {
            return result.get(HANG_SECONDS, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError(what + " waited for the internal lock", e);
        }
    }

    /**
     * Holds the lock of a semaphore with nobody queued and nothing gated: a start refused by the
     * queue bound 0 asks the node's callName() under the lock. Returns the node (open it to let go).
     */
    private static BlockingName holdLockWithEmptyQueue(Semaphore s) throws InterruptedException {
        BlockingName node = new BlockingName();
        daemon(() -> assertThrows(SemaphoreRejectedException.class, () -> s.startAcquisition(1, node)));
        assertTrue(node.inside.await(HANG_SECONDS, TimeUnit.SECONDS));
        return node;
    }

    @Test
    void aResizedSemaphoreReleasesTakesAndObservesWithoutTheLock() throws Exception {
        Semaphore s = Semaphore.builder(10).maxQueueLength(0).build();
        s.setCapacity(11);
        s.setCapacity(10);
        s.setCapacity(12);
        s.setCapacity(10);
        assertTrue(s.tryAcquire(10));
        BlockingName holder = holdLockWithEmptyQueue(s);
        try {
            whileLockHeld("release after a resize", () -> {
                s.release(3);
                return null;
            });
            assertEquals(3L, whileLockHeld("availablePermits after a resize", s::availablePermits));
            assertTrue(whileLockHeld("tryAcquire after a resize", () -> s.tryAcquire(2)));
            assertEquals(
                    IllegalStateException.class,
                    whileLockHeld("an over-release after a resize", () -> {
                        try {
                            s.release(100);
                            return null;
                        } catch (IllegalStateException refused) {
                            return refused.getClass();
                        }
                    }),
                    "refused, as before the resize");
        } finally {
            holder.open.countDown();
        }
        s.release(9);
        assertEquals(10, s.availablePermits());
    }

    @Test
    void aSemaphoreInDebtReleasesUnderTheLockUntilTheDebtIsPaid() throws Exception {
        Semaphore s = Semaphore.builder(10).maxQueueLength(0).build();
        assertTrue(s.tryAcquire(10));
        s.setCapacity(8); // 2 owed
        s.release(2); // pays the debt (under the lock)
        BlockingName holder = holdLockWithEmptyQueue(s);
        try {
            whileLockHeld("release once the debt is paid", () -> {
                s.release(1);
                return null;
            });
        } finally {
            holder.open.countDown();
        }
        assertEquals(1, s.availablePermits());
        s.release(7);
        assertEquals(8, s.availablePermits());
    }

    /**
     * The queue [slow, other] on {@code s}; a release grants slow, whose claim then holds the lock
     * with other still queued. Returns the claim (open it to let go).
     */
    private static SlowClaim holdLockWithQueue(Semaphore s) throws InterruptedException {
        assertTrue(s.tryAcquire(s.capacity()));
        SlowClaim slow = new SlowClaim();
        s.acquireThen(1, slow);
        s.acquireThen(1, () -> {});
        daemon(() -> s.release(1));
        assertTrue(slow.inside.await(HANG_SECONDS, TimeUnit.SECONDS));
        return slow;
    }

    private static void appendsWithoutTheLock(Semaphore s, String what) throws Exception {
        SlowClaim slow = holdLockWithQueue(s);
        List<CompletableFuture<Permits>> appended = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                appended.add(whileLockHeld(what, () -> s.acquireAsync(1)));
            }
        } finally {
            slow.open.countDown();
        }
        for (CompletableFuture<Permits> f : appended) {
            assertFalse(f.isDone());
        }
        long capacity = s.capacity();
        for (int i = 0; i < 4; i++) {
            s.release(1); // the callback behind slow, then the three appended futures, in order
        }
        for (CompletableFuture<Permits> f : appended) {
            assertTrue(f.isDone());
        }
        s.release(capacity); // what slow, the callback behind it and the three futures hold
        assertEquals(capacity, s.availablePermits());
        assertEquals(0, s.queueLength());
    }

    @Test
    void aSemaphoreWithAListenerOrAQueueBoundAppendsWithoutTheLock() throws Exception {
        List<Long> queued = java.util.Collections.synchronizedList(new ArrayList<>());
        WaitListener listener = new WaitListener() {
            @Override
            public void queued(long permits, int waitersAhead) {
                queued.add(permits);
            }
        };
        appendsWithoutTheLock(Semaphore.builder(5).listener(listener).build(), "an append with a listener");
        assertEquals(5, queued.size(), "every queued node was reported: " + queued);
        appendsWithoutTheLock(
                Semaphore.builder(5).maxQueueLength(10).maxQueuedPermits(100).build(), "an append with queue bounds");
    }

    @Test
    void aResizedSemaphoreAppendsWithoutTheLockAgain() throws Exception {
        Semaphore s = new Semaphore(5);
        s.setCapacity(6);
        s.setCapacity(5);
        appendsWithoutTheLock(s, "an append after a resize");
    }

    @Test
    void aShrinkWhileOthersWaitStillFailsTheNodesThatCanNeverFitAndTheQueueAppendsLockFreeAfterwards()
            throws Exception {
        Semaphore s = new Semaphore(5);
        assertTrue(s.tryAcquire(5));
        List<Acquisition> light = new ArrayList<>();
        light.add(s.acquireThen(1, () -> {}));
        Acquisition heavy = s.acquireThen(4, () -> {});
        light.add(s.acquireThen(2, () -> {}));
        s.setCapacity(3);
        assertTrue(heavy.failure() instanceof IllegalStateException, heavy.toString());
        assertEquals(2, s.queueLength());
        assertThrows(
                IllegalArgumentException.class, () -> s.acquireThen(4, () -> {}), "too heavy for the new capacity");
        light.add(s.acquireThen(1, () -> {})); // under the lock: unseals the tail
        light.add(s.acquireThen(1, () -> {})); // lock-free again
        assertEquals(4, s.queueLength());
        assertEquals(5, s.queuedPermits());
        s.release(5); // pays the debt of 2, then grants 1 and 2
        assertTrue(light.get(0).isGranted() && light.get(1).isGranted());
        s.release(3);
        for (Acquisition a : light) {
            assertTrue(a.isGranted(), a.toString());
        }
        s.release(2);
        assertEquals(3, s.availablePermits());
    }

    @Test
    void queuedPermitsSaturateInsteadOfOverflowingAndComeBackExactly() {
        long max = Semaphore.MAX_PERMITS;
        Semaphore s = new Semaphore(max);
        assertTrue(s.tryAcquire(1));
        List<Acquisition> waiting = new ArrayList<>();
        int n = (int) (Long.MAX_VALUE / max) + 72; // the sum passes Long.MAX_VALUE after 128 nodes (max = 2^56)
        for (int i = 0; i < n; i++) {
            waiting.add(s.acquireThen(max, () -> {}));
        }
        assertEquals(n, s.queueLength());
        assertEquals(Long.MAX_VALUE, s.queuedPermits(), "saturated, never negative");
        assertTrue(s.toString().contains("queued=" + n), s.toString());
        for (int i = n - 1; i >= 100; i--) {
            assertTrue(waiting.get(i).cancel());
        }
        assertEquals(100, s.queueLength());
        assertEquals(100 * max, s.queuedPermits(), "exact again once it fits");
        for (int i = 1; i < 100; i++) {
            assertTrue(waiting.get(i).cancel()); // from the middle
        }
        assertEquals(max, s.queuedPermits());
        assertTrue(waiting.get(0).cancel());
        assertEquals(0, s.queuedPermits());
        s.release(1);
        assertEquals(max, s.availablePermits());
    }

    @Test
    void aQueueBoundNearLongMaxValueIsCheckedWithoutOverflow() {
        long max = Semaphore.MAX_PERMITS;
        Semaphore s =
                Semaphore.builder(max).maxQueuedPermits(Long.MAX_VALUE - 1).build();
        assertTrue(s.tryAcquire(1));
        int fits = (int) ((Long.MAX_VALUE - 1) / max); // 127 waiters of 2^56
        for (int i = 0; i < fits; i++) {
            s.acquireThen(max, () -> {});
        }
        assertEquals(fits * max, s.queuedPermits());
        SemaphoreRejectedException shed =
                assertThrows(SemaphoreRejectedException.class, () -> s.acquireThen(max, () -> {}));
        assertTrue(shed.getMessage().contains("maxQueuedPermits " + (Long.MAX_VALUE - 1)), shed.getMessage());
        assertEquals(fits, s.queueLength(), "nothing queued");
        long room = Long.MAX_VALUE - 1 - fits * max;
        s.acquireThen(room, () -> {}); // exactly up to the bound: queued
        assertEquals(Long.MAX_VALUE - 1, s.queuedPermits());
        assertThrows(SemaphoreRejectedException.class, () -> s.acquireThen(1, () -> {}));
    }

    /**
     * 100,000 waiters: queueLength(), queuedPermits() and toString() are O(1) (kept counters, not a
     * walk of the queue under the lock), and stay exact while releases hand permits on.
     */
    @Test
    void observersOfAHundredThousandWaitersStayExactWhileReleasesProceed() throws Exception {
        int n = 100_000;
        Semaphore s = new Semaphore(n);
        assertTrue(s.tryAcquire(n));
        for (int i = 0; i < n; i++) {
            s.acquireThen(1, () -> {});
        }
        CountDownLatch done = new CountDownLatch(1);
        Thread releaser = daemon(() -> {
            for (int i = 0; i < n; i++) {
                s.release(1);
            }
            done.countDown();
        });
        long lastLength = n;
        int observed = 0;
        while (done.getCount() > 0) {
            int length = s.queueLength();
            long permits = s.queuedPermits();
            String text = s.toString();
            assertTrue(length <= lastLength, "the queue only shrinks: " + length + " after " + lastLength);
            assertTrue(permits <= length, "weight 1 each, read after the length: " + permits + " > " + length);
            assertTrue(text.startsWith("Semaphore["), text);
            lastLength = length;
            observed++;
        }
        releaser.join(HANG_SECONDS * 1000);
        assertEquals(0, s.queueLength());
        assertEquals(0, s.queuedPermits());
        assertTrue(observed > 0);
        s.release(n);
        assertEquals(n, s.availablePermits());
    }
}
