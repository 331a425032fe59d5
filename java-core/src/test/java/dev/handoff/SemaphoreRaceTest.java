// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Races run in loops: each round ends with every permit accounted for. */
class SemaphoreRaceTest {

    private static final int ROUNDS = 3_000;

    /** Runs two actions at (nearly) the same moment on two threads. */
    private static void race(Runnable a, Runnable b) throws Exception {
        CyclicBarrier start = new CyclicBarrier(2);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread other = new Thread(() -> {
            try {
                start.await();
                b.run();
            } catch (Throwable t) {
                failure.set(t);
            }
        });
        other.start();
        start.await();
        a.run();
        other.join(TimeUnit.SECONDS.toMillis(20));
        assertFalse(other.isAlive(), "racing thread hung");
        assertNull(failure.get());
    }

    @Test
    void fifoAcrossThreads() throws Exception {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            int id = i;
            int weight = 1 + (i % 2);
            Thread t = new Thread(() -> {
                try {
                    s.acquireBlocking(weight);
                    order.add(id);
                    s.release(weight);
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            });
            t.start();
            threads.add(t);
            int queued = i + 1;
            SemaphoreContractTest.waitUntil(() -> s.queueLength() == queued); // join in a known order
        }
        s.release(2);
        for (Thread t : threads) {
            t.join(TimeUnit.SECONDS.toMillis(20));
        }
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7), order);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void cancelRacingReleaseHasExactlyOneWinner() throws Exception {
        for (int round = 0; round < ROUNDS; round++) {
            Semaphore s = new Semaphore(3);
            assertTrue(s.tryAcquire(3));
            RecordingWaker w = new RecordingWaker();
            Acquisition a = s.acquireThen(2, w);
            Acquisition behind = s.acquireThen(1, () -> {});
            AtomicInteger cancelled = new AtomicInteger();
            race(() -> s.release(3), () -> cancelled.set(a.cancel() ? 1 : 0));
            if (cancelled.get() == 1) {
                assertFalse(a.isGranted());
                assertEquals(0, w.wakes.get());
            } else {
                assertTrue(a.isGranted());
                assertEquals(1, w.wakes.get());
                s.release(2);
            }
            assertTrue(behind.isGranted());
            s.release(1);
            assertEquals(3, s.availablePermits(), "round " + round);
            assertEquals(0, s.queueLength());
        }
    }

    @Test
    void cancelOfAPartiallyServedHeadRacingReleaseLosesNothing() throws Exception {
        for (int round = 0; round < ROUNDS; round++) {
            Semaphore s = new Semaphore(4);
            assertTrue(s.tryAcquire(4));
            Acquisition head = s.acquireThen(4, () -> {});
            s.release(2); // head holds 2 of 4
            Acquisition next = s.acquireThen(3, () -> {});
            AtomicInteger cancelled = new AtomicInteger();
            race(() -> s.release(2), () -> cancelled.set(head.cancel() ? 1 : 0));
            if (cancelled.get() == 1) {
                assertTrue(next.isGranted(), "the head's 2 and the released 2 serve the next");
                s.release(3);
            } else {
                assertTrue(head.isGranted());
                s.release(4);
                assertTrue(next.isGranted());
                s.release(3);
            }
            assertEquals(4, s.availablePermits(), "round " + round);
        }
    }

    @Test
    void closeRacingReleaseLosesNothing() throws Exception {
        for (int round = 0; round < ROUNDS; round++) {
            Semaphore s = new Semaphore(5);
            assertTrue(s.tryAcquire(5));
            Acquisition a = s.acquireThen(3, () -> {});
            Acquisition b = s.acquireThen(4, () -> {});
            race(() -> s.release(4), s::close);
            assertTrue(s.isClosed());
            assertEquals(0, s.queueLength());
            long held = 1; // ours, after releasing 4
            if (a.isGranted()) {
                held += 3;
            }
            assertFalse(b.isGranted(), "b needs 4 and at most 1 was left for it");
            assertTrue(b.isClosed());
            s.release(held);
            assertEquals(5, s.availablePermits(), "round " + round);
        }
    }

    @Test
    void futureCancelRacingReleaseNeverLeavesACancelledFutureHolding() throws Exception {
        for (int round = 0; round < ROUNDS; round++) {
            Semaphore s = new Semaphore(2);
            assertTrue(s.tryAcquire(2));
            CompletableFuture<Permits> f = s.acquireAsync(2);
            AtomicInteger cancelled = new AtomicInteger();
            race(() -> s.release(2), () -> cancelled.set(f.cancel(false) ? 1 : 0));
            if (cancelled.get() == 1) {
                assertTrue(f.isCancelled());
                assertEquals(2, s.availablePermits(), "round " + round);
            } else {
                f.get(20, TimeUnit.SECONDS); // completes normally
                assertEquals(0, s.availablePermits());
                s.release(2);
            }
        }
    }

    @Test
    void orTimeoutRacingReleaseNeverLeavesAFailedFutureHolding() throws Exception {
        for (int round = 0; round < 300; round++) {
            Semaphore s = new Semaphore(1);
            assertTrue(s.tryAcquire(1));
            CompletableFuture<Permits> f = s.acquireAsync(1).orTimeout(100, TimeUnit.MICROSECONDS);
            Thread.sleep(0, 50_000);
            s.release(1);
            try {
                f.get(20, TimeUnit.SECONDS);
                s.release(1); // granted: ours to return
            } catch (java.util.concurrent.ExecutionException timedOut) {
                assertTrue(timedOut.getCause() instanceof java.util.concurrent.TimeoutException);
            }
            assertEquals(1, s.availablePermits(), "round " + round);
            assertEquals(0, s.queueLength());
        }
    }

    @Test
    void interruptRacingReleaseEitherThrowsHoldingNothingOrReturnsWithTheFlagSet() throws Exception {
        int interruptedRounds = 0;
        int grantedRounds = 0;
        for (int round = 0; round < 1_000; round++) {
            Semaphore s = new Semaphore(1);
            assertTrue(s.tryAcquire(1));
            AtomicReference<String> outcome = new AtomicReference<>();
            CountDownLatch queued = new CountDownLatch(1);
            Thread waiter = new Thread(() -> {
                queued.countDown();
                try {
                    s.acquireBlocking(1);
                    outcome.set(Thread.currentThread().isInterrupted() ? "granted+flag" : "granted");
                } catch (InterruptedException e) {
                    outcome.set(Thread.currentThread().isInterrupted() ? "thrown+flag" : "thrown");
                }
            });
            waiter.start();
            queued.await();
            SemaphoreContractTest.waitUntil(() -> s.queueLength() == 1 || outcome.get() != null);
            race(() -> s.release(1), waiter::interrupt);
            waiter.join(TimeUnit.SECONDS.toMillis(20));
            switch (outcome.get()) {
                case "thrown":
                    interruptedRounds++;
                    assertEquals(1, s.availablePermits(), "round " + round);
                    break;
                case "granted+flag":
                case "granted": // the grant and its wake-up came before the interrupt was seen
                    grantedRounds++;
                    assertEquals(0, s.availablePermits());
                    s.release(1);
                    break;
                default:
                    throw new AssertionError("round " + round + ": " + outcome.get());
            }
            assertEquals(1, s.availablePermits());
            assertEquals(0, s.queueLength());
        }
        assertEquals(1_000, interruptedRounds + grantedRounds);
    }

    @Test
    void timeoutRacingReleaseEitherFailsHoldingNothingOrSucceeds() throws Exception {
        for (int round = 0; round < 1_000; round++) {
            Semaphore s = new Semaphore(3);
            assertTrue(s.tryAcquire(3));
            AtomicInteger got = new AtomicInteger(-1);
            long timeoutNanos = 20_000 + (round % 50) * 1_000L;
            Thread waiter = new Thread(() -> {
                try {
                    got.set(s.tryAcquireBlocking(2, Duration.ofNanos(timeoutNanos)) ? 1 : 0);
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            });
            waiter.start();
            Thread.sleep(0, 20_000);
            s.release(3);
            waiter.join(TimeUnit.SECONDS.toMillis(20));
            if (got.get() == 1) {
                s.release(2);
            } else {
                assertEquals(0, got.get());
            }
            assertEquals(3, s.availablePermits(), "round " + round);
            assertEquals(0, s.queueLength());
        }
    }

    @Test
    void closeWakesBlockedThreadsWithSemaphoreClosedException() throws Exception {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            try {
                s.acquireBlocking(1);
            } catch (Throwable t) {
                thrown.set(t);
            }
        });
        waiter.start();
        SemaphoreContractTest.waitUntil(() -> s.queueLength() == 1);
        s.close();
        waiter.join(TimeUnit.SECONDS.toMillis(20));
        assertTrue(thrown.get() instanceof SemaphoreClosedException, String.valueOf(thrown.get()));
        assertTrue(thrown.get().getMessage().contains("acquireBlocking(1)"));
        s.release(1);
        assertEquals(1, s.availablePermits());
    }

    @Test
    void overReleaseRacingADeclinedImmediateGrantIsAlwaysRefused() throws Exception {
        // A declined claim inside acquire takes permits out of free for a moment; a concurrent
        // (mistaken) release must still see that nothing is held.
        for (int round = 0; round < ROUNDS; round++) {
            Semaphore s = new Semaphore(1);
            RecordingWaker declining = new RecordingWaker();
            declining.declineClaim = true;
            AtomicInteger accepted = new AtomicInteger();
            race(() -> s.acquireThen(1, declining), () -> {
                try {
                    s.release(1);
                    accepted.incrementAndGet();
                } catch (IllegalStateException expected) {
                    // nothing held: refused
                }
            });
            assertEquals(0, accepted.get(), "round " + round + ": release(1) accepted while nothing was held");
            assertEquals(1, s.availablePermits(), "round " + round);
        }
    }

    @Test
    void tryAcquireTakesWhatIsLeftWhileAnImmediateGrantIsBeingClaimed() throws Exception {
        Semaphore s = new Semaphore(3);
        CountDownLatch inClaim = new CountDownLatch(1);
        CountDownLatch leaveClaim = new CountDownLatch(1);
        AtomicReference<Acquisition> granted = new AtomicReference<>();
        Thread acquirer = new Thread(() -> granted.set(s.acquireThen(1, new Waker() {
            @Override
            public boolean claim() {
                inClaim.countDown();
                try {
                    leaveClaim.await(20, TimeUnit.SECONDS); // a slow claim, for the test's sake
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return true;
            }

            @Override
            public void wake() {}
        })));
        acquirer.start();
        assertTrue(inClaim.await(20, TimeUnit.SECONDS));
        assertEquals(0, s.queueLength());
        assertTrue(s.tryAcquire(2), "nobody waits and 2 permits are free: no spurious failure");
        assertFalse(s.tryAcquire(1));
        leaveClaim.countDown();
        acquirer.join(TimeUnit.SECONDS.toMillis(20));
        assertTrue(granted.get().isGranted());
        s.release(2);
        s.release(1);
        assertEquals(3, s.availablePermits());
    }

    @Test
    void cancelledFutureReportsCancellation() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        CompletableFuture<Permits> f = s.acquireAsync(1);
        assertTrue(f.cancel(true));
        assertTrue(f.isCancelled());
        try {
            f.join();
            throw new AssertionError("join of a cancelled future returned");
        } catch (CancellationException expected) {
            // the standard signal
        }
        s.release(1);
        assertEquals(1, s.availablePermits());
    }
}
