// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The queue: FIFO, head-of-line blocking, no barging, direct handoff, partial assignment, wakers. */
class SemaphoreQueueTest {

    @Test
    void waitersAreGrantedInArrivalOrder() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        List<String> log = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            s.acquireThen(1, new RecordingWaker("w" + i, log));
        }
        for (int i = 0; i < 5; i++) {
            s.release(1);
        }
        assertEquals(List.of("w0", "w1", "w2", "w3", "w4"), log);
        s.release(1);
        assertEquals(1, s.availablePermits());
    }

    @Test
    void aHeavyHeadBlocksLighterWaitersBehindIt() {
        Semaphore s = new Semaphore(10);
        assertTrue(s.tryAcquire(8));
        RecordingWaker heavy = new RecordingWaker();
        RecordingWaker light = new RecordingWaker();
        Acquisition h = s.acquireThen(10, heavy);
        Acquisition l = s.acquireThen(1, light);
        s.release(5); // 2 + 5 = 7 of 10 handed to the head; the light one would fit but must wait
        assertFalse(h.isGranted());
        assertFalse(l.isGranted());
        assertEquals(0, s.availablePermits());
        s.release(3);
        assertTrue(h.isGranted());
        assertFalse(l.isGranted());
        s.release(10);
        assertTrue(l.isGranted());
        s.release(1);
        assertEquals(10, s.availablePermits());
    }

    @Test
    void noBargingWhileAnyoneWaits() {
        Semaphore s = new Semaphore(4);
        assertTrue(s.tryAcquire(3));
        Acquisition head = s.acquireThen(2, () -> {}); // takes the 1 free, waits for 1 more
        assertEquals(0, s.availablePermits());
        assertFalse(s.tryAcquire(1), "tryAcquire must not take the permit meant for the head");
        s.release(3);
        assertTrue(head.isGranted());
        assertEquals(2, s.availablePermits());
        s.release(2);
    }

    @Test
    void oneReleaseGrantsSeveralHeadsAndStopsAtTheFirstThatDoesNotFit() {
        Semaphore s = new Semaphore(10);
        assertTrue(s.tryAcquire(10));
        List<String> log = new ArrayList<>();
        Acquisition a = s.acquireThen(2, new RecordingWaker("a", log));
        Acquisition b = s.acquireThen(3, new RecordingWaker("b", log));
        Acquisition c = s.acquireThen(4, new RecordingWaker("c", log));
        Acquisition d = s.acquireThen(1, new RecordingWaker("d", log));
        s.release(7); // a (2) and b (3) fit; c gets 2 of 4 and blocks d
        assertEquals(List.of("a", "b"), log);
        assertTrue(a.isGranted() && b.isGranted());
        assertFalse(c.isGranted());
        assertFalse(d.isGranted());
        assertEquals(0, s.availablePermits(), "partial assignment is not free");
        assertEquals(2, s.queueLength());
        s.release(3); // c needs 2 more; d takes 1 of the surplus
        assertEquals(List.of("a", "b", "c", "d"), log);
        assertEquals(0, s.queueLength());
        s.release(2);
        s.release(3);
        s.release(4);
        s.release(1);
        assertEquals(10, s.availablePermits());
    }

    @Test
    void cancellingAPartiallyServedHeadGrantsTheWaitersBehindIt() {
        Semaphore s = new Semaphore(6);
        assertTrue(s.tryAcquire(6));
        RecordingWaker headWaker = new RecordingWaker();
        Acquisition head = s.acquireThen(5, headWaker);
        RecordingWaker next = new RecordingWaker();
        Acquisition second = s.acquireThen(2, next);
        Acquisition third = s.acquireThen(2, () -> {});
        s.release(3); // head has 3 of 5
        assertEquals(0, s.availablePermits());
        assertTrue(head.cancel());
        assertFalse(head.cancel(), "idempotent");
        assertEquals(0, headWaker.wakes.get() + headWaker.claims.get(), "a cancelled waker is never called");
        assertTrue(second.isGranted(), "2 of the head's 3 go to the next waiter");
        assertFalse(third.isGranted(), "1 left over is handed to the third as a partial assignment");
        assertEquals(0, s.availablePermits());
        s.release(1);
        assertTrue(third.isGranted());
        s.release(2); // ours: 6 - 3 - 1
        s.release(2); // second's
        s.release(2); // third's
        assertEquals(6, s.availablePermits());
    }

    @Test
    void cancellingTheOnlyWaiterMakesItsPartialPermitsFree() {
        Semaphore s = new Semaphore(4);
        assertTrue(s.tryAcquire(1));
        Acquisition a = s.acquireThen(4, () -> {}); // takes 3, needs 1 more
        assertEquals(0, s.availablePermits());
        assertTrue(a.cancel());
        assertEquals(3, s.availablePermits());
        assertTrue(s.tryAcquire(3), "no barging bar once the queue is empty");
        s.release(4);
        assertEquals(4, s.availablePermits());
    }

    @Test
    void cancellingAMiddleWaiterKeepsTheOrderOfTheOthers() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        List<String> log = new ArrayList<>();
        s.acquireThen(1, new RecordingWaker("a", log));
        Acquisition b = s.acquireThen(1, new RecordingWaker("b", log));
        s.acquireThen(1, new RecordingWaker("c", log));
        assertTrue(b.cancel());
        assertEquals(2, s.queueLength());
        s.release(1);
        s.release(1);
        assertEquals(List.of("a", "c"), log);
        s.release(1);
    }

    @Test
    void aDecliningClaimPassesItsPartialPermitsOnInTheSameRelease() {
        Semaphore s = new Semaphore(4);
        assertTrue(s.tryAcquire(4));
        RecordingWaker gone = new RecordingWaker();
        Acquisition first = s.acquireThen(3, gone);
        RecordingWaker next = new RecordingWaker();
        Acquisition second = s.acquireThen(3, next);
        s.release(2); // first has 2 of 3
        gone.declineClaim = true;
        s.release(2); // first would be granted, declines; its 2 + the 1 left go to second
        assertFalse(first.isGranted());
        assertFalse(first.cancel(), "a declined acquisition is no longer waiting");
        assertEquals(0, gone.wakes.get());
        assertTrue(second.isGranted());
        assertEquals(1, next.claims.get());
        assertEquals(1, s.availablePermits());
        s.release(3);
        assertEquals(4, s.availablePermits());
    }

    @Test
    void wakersRunAfterTheLockIsReleased() throws Exception {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        AtomicBoolean otherThreadGotThrough = new AtomicBoolean();
        s.acquireThen(1, () -> {
            // Another thread needs the internal lock (acquire slow path). If wake() ran under it,
            // this join would time out.
            Thread t = new Thread(() -> {
                Acquisition a = s.acquireThen(1, () -> {});
                otherThreadGotThrough.set(!a.isGranted() && a.cancel());
            });
            t.start();
            try {
                t.join(TimeUnit.SECONDS.toMillis(20));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        s.release(1);
        assertTrue(otherThreadGotThrough.get());
        s.release(1);
        assertEquals(1, s.availablePermits());
    }

    @Test
    void aWakerThatReleasesReentrantlyGrantsTheNextWaiter() {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        List<String> log = new ArrayList<>();
        s.acquireThen(2, () -> {
            log.add("first woken");
            s.release(2); // hands both to the next waiter from inside a waker
            log.add("first released");
        });
        s.acquireThen(2, () -> log.add("second woken"));
        s.release(2);
        // a shallow nested wake runs inside the nested release, like an ordinary call
        assertEquals(List.of("first woken", "second woken", "first released"), log);
        s.release(2);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void aChainOfTenThousandReleasingWakersDoesNotOverflowTheStack() {
        int n = 10_000;
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        AtomicInteger woken = new AtomicInteger();
        for (int i = 0; i < n; i++) {
            s.acquireThen(1, () -> {
                woken.incrementAndGet();
                s.release(1);
            });
        }
        assertEquals(n, s.queueLength());
        s.release(1); // each waker releases to the next: 10,000 nested releases without a trampoline
        assertEquals(n, woken.get());
        assertEquals(1, s.availablePermits());
        assertEquals(0, s.queueLength());
    }

    @Test
    void aWakerThatReleasesAndWaitsForTheThreadItGrantedDoesNotDeadlock() throws Exception {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        // Build a chain deeper than the nesting limit, so that the last waker runs deferred.
        AtomicInteger depth = new AtomicInteger();
        int chain = WakeRun.MAX_NESTED_WAKES + 4;
        CountDownLatch parkedThreadDone = new CountDownLatch(1);
        AtomicBoolean waitedOk = new AtomicBoolean();
        for (int i = 0; i < chain; i++) {
            boolean last = i == chain - 1;
            s.acquireThen(1, () -> {
                depth.incrementAndGet();
                s.release(1); // grants the next; for the last, the parked thread below
                if (last) {
                    try {
                        waitedOk.set(parkedThreadDone.await(20, TimeUnit.SECONDS));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            });
        }
        Thread parked = new Thread(() -> {
            try {
                s.acquireBlocking(1);
                s.release(1);
                parkedThreadDone.countDown();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        parked.start();
        SemaphoreContractTest.waitUntil(() -> s.queueLength() == chain + 1);
        s.release(1);
        assertEquals(chain, depth.get());
        assertTrue(waitedOk.get(), "the parked thread was unparked while a deferred waker waited for it");
        parked.join(TimeUnit.SECONDS.toMillis(20));
        assertEquals(1, s.availablePermits());
    }

    /**
     * A user's Waker.claim() runs after the internal lock is released, so one that calls back into
     * the semaphore (which the contract still advises against) finds it working: here the claim
     * releases another permit, which the next waiter takes in the same release.
     */
    @Test
    void aWakersClaimRunsOutsideTheLockSoACallBackWorks() throws Exception {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        AtomicInteger wakes = new AtomicInteger();
        java.util.concurrent.atomic.AtomicLong seenInClaim = new java.util.concurrent.atomic.AtomicLong(-1);
        Acquisition first = s.acquireThen(1, new Waker() {
            @Override
            public boolean claim() {
                seenInClaim.set(s.queueLength()); // an observer: never waits for this claim
                s.release(1); // gives the other held permit back: the next waiter's
                return true;
            }

            @Override
            public void wake() {
                wakes.incrementAndGet();
            }
        });
        RecordingWaker next = new RecordingWaker();
        Acquisition second = s.acquireThen(1, next);
        Thread releaser = new Thread(() -> s.release(1));
        releaser.start();
        releaser.join(TimeUnit.SECONDS.toMillis(20));
        assertFalse(releaser.isAlive());
        assertTrue(first.isGranted());
        assertEquals(1, wakes.get());
        assertEquals(1, seenInClaim.get(), "the second waiter was still queued");
        assertTrue(second.isGranted(), "granted by the release made inside the first claim");
        assertEquals(0, s.availablePermits());
        assertEquals(0, s.queueLength());
        s.release(2);
        assertEquals(2, s.availablePermits());
    }

    /**
     * An adapter's node claims under the internal lock (its contract: a short step that never calls
     * back); one that calls back gets an IllegalStateException, which fails its acquisition.
     */
    @Test
    void anAdaptersClaimThatCallsBackIntoTheSemaphoreIsRefusedAndFailsItsAcquisition() throws Exception {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        AtomicInteger badWakes = new AtomicInteger();
        Acquisition bad = s.startAcquisition(1, new Acquisition() {
            @Override
            protected boolean claim() {
                s.release(1); // forbidden: an adapter's claim() never calls back
                return true;
            }

            @Override
            protected void wake() {
                badWakes.incrementAndGet();
            }
        });
        RecordingWaker next = new RecordingWaker();
        Acquisition good = s.acquireThen(1, next);
        Thread releaser = new Thread(() -> s.release(1));
        releaser.start();
        releaser.join(TimeUnit.SECONDS.toMillis(20));
        assertTrue(bad.failure() instanceof IllegalStateException, String.valueOf(bad.failure()));
        assertEquals(1, badWakes.get(), "the failed acquisition is woken, so its waiter learns of it");
        assertFalse(bad.isGranted());
        assertFalse(bad.isClosed());
        assertTrue(good.isGranted());
        // The refused call left the internal lock free: another thread can queue (which takes it).
        CompletableFuture<CompletableFuture<Permits>> queued = CompletableFuture.supplyAsync(() -> s.acquireAsync(1));
        CompletableFuture<Permits> third = queued.get(20, TimeUnit.SECONDS);
        assertFalse(third.isDone());
        s.release(1);
        assertTrue(third.isDone());
        s.release(1);
        s.release(1);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void aThrowingWakerIsReportedAndStopsNothing() throws Exception {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        RuntimeException boom = new RuntimeException("boom");
        RecordingWaker after = new RecordingWaker();
        s.acquireThen(1, () -> {
            throw boom;
        });
        s.acquireThen(1, after);
        AtomicReference<Throwable> reported = new AtomicReference<>();
        AtomicReference<Thread> reportedOn = new AtomicReference<>();
        Thread releaser = new Thread(() -> s.release(2));
        releaser.setUncaughtExceptionHandler((t, e) -> {
            reportedOn.set(t);
            reported.set(e);
        });
        releaser.start();
        releaser.join(TimeUnit.SECONDS.toMillis(20));
        assertSame(boom, reported.get());
        assertSame(releaser, reportedOn.get());
        assertEquals(1, after.wakes.get(), "the next waker still ran");
        assertEquals(0, s.availablePermits(), "both waiters hold their permit");
        s.release(2);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void aThrowingClaimFailsItsAcquisitionAndWakesIt() throws Exception {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        IllegalStateException boom = new IllegalStateException("claim failed");
        AtomicInteger badWakes = new AtomicInteger();
        Acquisition bad = s.acquireThen(1, new Waker() {
            @Override
            public boolean claim() {
                throw boom;
            }

            @Override
            public void wake() {
                badWakes.incrementAndGet();
            }
        });
        RecordingWaker next = new RecordingWaker();
        Acquisition good = s.acquireThen(1, next);
        Thread releaser = new Thread(() -> s.release(1));
        releaser.start();
        releaser.join(TimeUnit.SECONDS.toMillis(20));
        assertSame(boom, bad.failure());
        assertEquals(1, badWakes.get());
        assertFalse(bad.isGranted());
        assertFalse(bad.cancel(), "a failed acquisition is settled");
        assertTrue(good.isGranted(), "its permit went on to the next waiter");
        s.release(1);
        assertEquals(1, s.availablePermits());
    }

    @Test
    void wakeRunsOnTheThreadThatResolvedTheAcquisition() throws Exception {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        RecordingWaker w = new RecordingWaker();
        s.acquireThen(1, w);
        Thread releaser = new Thread(() -> s.release(1), "releaser");
        releaser.start();
        releaser.join();
        assertSame(releaser, w.wokenOn);
        s.release(1);
    }

    @Test
    void asyncWaitersShareTheSameFifoQueue() throws Exception {
        Semaphore s = new Semaphore(3);
        assertTrue(s.tryAcquire(3));
        List<String> log = new ArrayList<>();
        CompletableFuture<Permits> f1 = s.acquireAsync(3);
        f1.thenRun(() -> log.add("future"));
        s.acquireThen(1, new RecordingWaker("callback", log));
        s.release(3);
        assertEquals(List.of("future"), log);
        s.release(3);
        assertEquals(List.of("future", "callback"), log);
        f1.get(1, TimeUnit.SECONDS);
        s.release(1);
        assertEquals(3, s.availablePermits());
    }

    /**
     * orTimeout fails the future on the JDK's single shared timer thread. The waiters that the
     * withdrawn head's partial permits complete must not be woken there (their dependents would
     * run on it, delaying every timeout in the process), and nothing may be lost.
     */
    @Test
    void aTimedOutFutureWakesTheWaitersBehindItOffTheJdkTimerThread() throws Exception {
        Semaphore s = new Semaphore(4);
        assertTrue(s.tryAcquire(4));
        CompletableFuture<Permits> head = s.acquireAsync(3);
        CompletableFuture<Permits> behind = s.acquireAsync(1);
        s.release(2); // the head holds 2 of its 3 as a partial assignment; behind waits
        AtomicReference<Thread> ranOn = new AtomicReference<>();
        CompletableFuture<Void> dependent = behind.thenRun(() -> ranOn.set(Thread.currentThread()));
        head.orTimeout(10, TimeUnit.MILLISECONDS);
        dependent.get(20, TimeUnit.SECONDS);
        // The head is withdrawn first and failed right after, on the timer thread: the woken waiter
        // may run before that, so wait for the head's failure rather than test for it.
        ExecutionException timedOut = assertThrows(ExecutionException.class, () -> head.get(20, TimeUnit.SECONDS));
        assertTrue(timedOut.getCause() instanceof TimeoutException, String.valueOf(timedOut.getCause()));
        assertFalse(
                ranOn.get().getName().contains("CompletableFutureDelayScheduler"),
                "the next waiter was woken on the JDK timer thread: "
                        + ranOn.get().getName());
        assertEquals(1, s.availablePermits()); // 2 partial: 1 to the next waiter, 1 free
        s.release(1);
        s.release(2);
        assertEquals(4, s.availablePermits());
    }
}
