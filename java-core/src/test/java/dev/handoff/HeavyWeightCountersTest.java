// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * The queue's weight with waiters of 2^32 permits or more (a weight in bytes of 4 GiB and up): the
 * counters keep the high 32 bits of the weights apart from the low ones, and such a waiter queues
 * under the internal lock, while lighter ones behind it still append without it. Checked against
 * the sum of the weights of the acquisitions still waiting, recomputed from the handles after
 * every step, with and without a bound on the queued weight.
 */
class HeavyWeightCountersTest {

    private static final long MAX = Semaphore.MAX_PERMITS;

    /** Weights on both sides of 2^32, with high and low parts, up to the largest. */
    private static final long[] WEIGHTS = {
        1, 7, (1L << 31) + 3, (1L << 32) - 1, 1L << 32, (1L << 32) + 5, (3L << 32) + 0xFFFF_FFFFL, 1L << 40, MAX
    };

    private static final long HANG_SECONDS = 30;

    /** The sum of the weights of the acquisitions still waiting, saturated at Long.MAX_VALUE. */
    private static long waitingWeight(List<Acquisition> started) {
        long sum = 0;
        for (Acquisition a : started) {
            if (isWaiting(a)) {
                sum = sum > Long.MAX_VALUE - a.permits() ? Long.MAX_VALUE : sum + a.permits();
            }
        }
        return sum;
    }

    private static boolean isWaiting(Acquisition a) {
        return a.state == Acquisition.WAITING;
    }

    @Test
    void queuedPermitsOfMixedWeightsAreExactThroughAppendsGrantsAndCancels() {
        for (long seed = 1; seed <= 40; seed++) {
            runMixed(new Semaphore(MAX), Long.MAX_VALUE, seed);
        }
    }

    @Test
    void aBoundOnTheQueuedWeightRefusesExactlyWhatWouldPassIt() {
        long[] bounds = {(1L << 32) + 6, (5L << 32) + 11, 1L << 41, Long.MAX_VALUE - 1};
        for (long bound : bounds) {
            for (long seed = 1; seed <= 20; seed++) {
                runMixed(Semaphore.builder(MAX).maxQueuedPermits(bound).build(), bound, seed);
            }
        }
    }

    /**
     * Random appends (every weight of {@link #WEIGHTS}), cancels from anywhere in the queue and
     * releases that serve the head (partly, when it is heavier than what comes back), while every
     * permit is held: after each step queueLength() and queuedPermits() are what the handles say,
     * and a start is refused by the bound exactly when the waiting weight plus its own passes it.
     */
    private static void runMixed(Semaphore s, long bound, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        assertTrue(s.tryAcquire(MAX));
        long releasable = MAX; // what this test holds and may give back
        List<Acquisition> started = new ArrayList<>();
        List<Acquisition> counted = new ArrayList<>(); // granted ones already added to releasable
        for (int step = 0; step < 300; step++) {
            int op = random.nextInt(10);
            if (op < 6) {
                long w = WEIGHTS[random.nextInt(WEIGHTS.length)];
                long before = waitingWeight(started);
                boolean fits = before <= bound - w || (before == 0 && s.availablePermits() >= w); // or granted at once
                try {
                    started.add(s.acquireThen(w, () -> {}));
                    assertTrue(fits, "seed " + seed + " step " + step + ": " + w + " queued behind " + before);
                } catch (SemaphoreRejectedException refused) {
                    assertFalse(fits, "seed " + seed + " step " + step + ": " + w + " refused behind " + before);
                }
            } else if (op < 8) {
                List<Acquisition> waiting = new ArrayList<>();
                for (Acquisition a : started) {
                    if (isWaiting(a)) {
                        waiting.add(a);
                    }
                }
                if (!waiting.isEmpty()) {
                    assertTrue(waiting.get(random.nextInt(waiting.size())).cancel());
                }
            } else if (releasable > 0) {
                long r = random.nextInt(3) == 0 ? releasable : 1 + random.nextLong(Math.min(releasable, 1L << 34));
                s.release(r);
                releasable -= r;
            }
            for (Acquisition a : started) {
                if (a.isGranted() && !counted.contains(a)) {
                    counted.add(a);
                    releasable += a.permits();
                }
            }
            long waiting =
                    started.stream().filter(HeavyWeightCountersTest::isWaiting).count();
            assertEquals(waiting, s.queueLength(), "seed " + seed + " step " + step);
            assertEquals(waitingWeight(started), s.queuedPermits(), "seed " + seed + " step " + step);
        }
        s.close();
        assertEquals(0, s.queueLength());
        assertEquals(0, s.queuedPermits());
    }

    @Test
    void theCountersStartAgainFromZeroOnceAHeavyQueueEmpties() {
        Semaphore s = new Semaphore(MAX);
        assertTrue(s.tryAcquire(MAX));
        Acquisition heavy = s.acquireThen(MAX, () -> {});
        Acquisition light = s.acquireThen(3, () -> {});
        assertEquals(MAX + 3, s.queuedPermits());
        assertTrue(light.cancel()); // the tail moves back to the heavy head
        assertEquals(MAX, s.queuedPermits());
        assertTrue(heavy.cancel()); // empty
        assertEquals(0, s.queuedPermits());
        Acquisition next = s.acquireThen(1L << 33, () -> {});
        s.acquireThen(2, () -> {});
        assertEquals((1L << 33) + 2, s.queuedPermits());
        s.release(MAX); // serves both
        assertTrue(next.isGranted());
        assertEquals(0, s.queuedPermits());
        assertEquals(0, s.queueLength());
    }

    /**
     * An acquisition that is its own waker, whose claim() holds the internal lock until
     * {@code open} (see InternalLockTest).
     */
    private static final class SlowClaim extends Acquisition {
        final CountDownLatch inside = new CountDownLatch(1);
        final CountDownLatch open = new CountDownLatch(1);

        @Override
        protected boolean claim() {
            inside.countDown();
            try {
                return open.await(4 * HANG_SECONDS, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }

        @Override
        protected void wake() {}
    }

    @Test
    void behindAHeavyWaiterLightOnesAppendWithoutTheLockAndHeavyOnesWaitForIt() throws Exception {
        Semaphore s =
                Semaphore.builder(MAX).maxQueuedPermits(Long.MAX_VALUE - 1).build();
        assertTrue(s.tryAcquire(MAX));
        SlowClaim slow = new SlowClaim();
        s.startAcquisition(1, slow);
        Acquisition heavy = s.acquireThen(1L << 40, () -> {});
        Thread releaser = new Thread(() -> s.release(1));
        releaser.setDaemon(true);
        releaser.start();
        assertTrue(slow.inside.await(HANG_SECONDS, TimeUnit.SECONDS)); // the lock is held, heavy queued
        CompletableFuture<CompletableFuture<Permits>> light = new CompletableFuture<>();
        CompletableFuture<CompletableFuture<Permits>> heavier = new CompletableFuture<>();
        Thread lightStarter = new Thread(() -> light.complete(s.acquireAsync(5)));
        Thread heavyStarter = new Thread(() -> heavier.complete(s.acquireAsync(1L << 33)));
        try {
            lightStarter.start();
            CompletableFuture<Permits> lightWait = light.get(HANG_SECONDS, TimeUnit.SECONDS); // no lock needed
            assertFalse(lightWait.isDone());
            heavyStarter.start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(HANG_SECONDS);
            while (!(heavyStarter.getState() == Thread.State.WAITING
                    && LockSupport.getBlocker(heavyStarter) == s.core().internalLock())) {
                assertTrue(System.nanoTime() < deadline, "the heavy start never waited for the lock");
                Thread.sleep(1);
            }
            assertFalse(heavier.isDone());
        } finally {
            slow.open.countDown();
        }
        CompletableFuture<Permits> heavyWait = heavier.get(HANG_SECONDS, TimeUnit.SECONDS);
        assertEquals(3, s.queueLength()); // heavy, the light one behind it, the heavier one last
        assertEquals((1L << 40) + 5 + (1L << 33), s.queuedPermits());
        assertTrue(heavy.cancel());
        assertEquals(5 + (1L << 33), s.queuedPermits());
        assertTrue(heavyWait.cancel(false));
        assertEquals(5, s.queuedPermits());
    }
}
