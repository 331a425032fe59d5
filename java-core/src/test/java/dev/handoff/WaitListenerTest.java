// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The wait listener (issue 13 §2): only the slow path is observed; every queued wait settles
 * exactly once with the right outcome, weight, wait time and queue position; a rejection is told
 * without a queue entry; a throwing listener changes nothing.
 */
class WaitListenerTest {

    /** Records every call as a line, and the settled outcomes. */
    static final class Log implements WaitListener {
        final List<String> events = new ArrayList<>();
        final AtomicLong lastWaitNanos = new AtomicLong(-1);

        @Override
        public synchronized void queued(long permits, int waitersAhead) {
            events.add("queued " + permits + " ahead " + waitersAhead);
        }

        @Override
        public synchronized void settled(long permits, WaitOutcome outcome, long waitNanos, int waitersAhead) {
            assertTrue(waitNanos >= 0, "negative wait " + waitNanos);
            lastWaitNanos.set(waitNanos);
            events.add(outcome + " " + permits + " ahead " + waitersAhead);
        }

        @Override
        public synchronized void rejected(long permits) {
            events.add("rejected " + permits);
        }

        synchronized List<String> snapshot() {
            return new ArrayList<>(events);
        }
    }

    private static Semaphore observed(long capacity, Log log) {
        return Semaphore.builder(capacity).listener(log).build();
    }

    @Test
    void grantsAtOnceAreNotObserved() throws Exception {
        Log log = new Log();
        Semaphore s = observed(4, log);
        assertTrue(s.tryAcquire(2));
        s.acquireBlocking(1);
        s.acquireAsync(1).get();
        assertTrue(s.tryAcquireBlocking(0, Duration.ofSeconds(1)));
        RecordingWaker w = new RecordingWaker();
        s.release(4);
        s.acquireThen(4, w);
        assertEquals(1, w.wakes.get());
        s.release(4);
        assertEquals(List.of(), log.snapshot());
    }

    @Test
    void aQueuedGrantIsToldWithItsPositionAndWait() throws Exception {
        Log log = new Log();
        Semaphore s = observed(4, log);
        assertTrue(s.tryAcquire(4));
        Acquisition first = s.acquireThen(3, new RecordingWaker());
        Acquisition second = s.acquireThen(2, new RecordingWaker());
        assertEquals(List.of("queued 3 ahead 0", "queued 2 ahead 1"), log.snapshot());
        TimeUnit.MILLISECONDS.sleep(20);
        s.release(3);
        assertTrue(first.isGranted());
        assertEquals("GRANTED 3 ahead 0", log.snapshot().get(2));
        assertTrue(log.lastWaitNanos.get() >= TimeUnit.MILLISECONDS.toNanos(20), "wait " + log.lastWaitNanos.get());
        s.release(4);
        assertTrue(second.isGranted());
        assertEquals("GRANTED 2 ahead 1", log.snapshot().get(3));
        assertEquals(4, log.snapshot().size());
    }

    @Test
    void everyWayAWaitEndsHasItsOutcome() throws Exception {
        Log log = new Log();
        Semaphore s = observed(4, log);
        assertTrue(s.tryAcquire(4));

        Acquisition cancelled = s.acquireThen(1, new RecordingWaker());
        assertTrue(cancelled.cancel());

        assertFalse(s.tryAcquireBlocking(2, Duration.ofMillis(5))); // blocking, timed out

        CompletableFuture<Permits> timedFuture = s.acquireAsync(3).orTimeout(5, TimeUnit.MILLISECONDS);
        ExecutionException timedOut = assertThrows(ExecutionException.class, timedFuture::get);
        assertInstanceOf(TimeoutException.class, timedOut.getCause());

        assertFalse(s.tryAcquireAsync(2, Duration.ofMillis(5)).get());

        CompletableFuture<Permits> cancelledFuture = s.acquireAsync(1);
        assertTrue(cancelledFuture.cancel(false));

        RecordingWaker decliner = new RecordingWaker();
        decliner.declineClaim = true;
        s.acquireThen(1, decliner);

        Acquisition throwing = s.acquireThen(1, new Waker() {
            @Override
            public boolean claim() {
                throw new IllegalStateException("claim failed");
            }

            @Override
            public void wake() {}
        });
        s.release(2); // the decliner declines, the throwing claim fails: 2 permits stay free
        assertEquals(throwing.failure().getMessage(), "claim failed");
        assertEquals(2, s.availablePermits());
        assertTrue(s.tryAcquire(2));

        Acquisition tooHeavy = s.acquireThen(4, new RecordingWaker());
        s.setCapacity(3); // it can never fit now: FAILED
        assertInstanceOf(IllegalStateException.class, tooHeavy.failure());

        Acquisition closed = s.acquireThen(1, new RecordingWaker());
        s.close();
        assertTrue(closed.isClosed());

        List<String> settled = new ArrayList<>();
        for (String e : log.snapshot()) {
            if (!e.startsWith("queued")) {
                settled.add(e.substring(0, e.indexOf(" ahead")));
            }
        }
        assertEquals(
                List.of(
                        "CANCELLED 1",
                        "TIMED_OUT 2",
                        "TIMED_OUT 3",
                        "TIMED_OUT 2",
                        "CANCELLED 1",
                        "CANCELLED 1",
                        "FAILED 1",
                        "FAILED 4",
                        "CLOSED 1"),
                settled);
    }

    /**
     * A timeout withdraws the future (one CAS) and then cancels its node under the lock; a grant
     * that reaches the node in between is declined. The listener must still hear "timed out". The
     * window is held open by a head (an adapter's node, whose claim() runs under the lock, by the
     * releasing thread) that waits until the timing-out thread is parked on that lock.
     */
    @Test
    void aTimeoutWhoseNodeIsReachedByAGrantFirstIsStillATimeout() throws Exception {
        Log log = new Log();
        Semaphore s = observed(2, log);
        assertTrue(s.tryAcquire(2));
        java.util.concurrent.CountDownLatch inClaim = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch letGo = new java.util.concurrent.CountDownLatch(1);
        Acquisition head = s.startAcquisition(
                1,
                new Acquisition() { // an adapter's node: claims under the lock
                    @Override
                    protected boolean claim() {
                        inClaim.countDown();
                        try {
                            return letGo.await(20, TimeUnit.SECONDS); // a test only: claims must not block
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            return false;
                        }
                    }

                    @Override
                    protected void wake() {}
                });
        CompletableFuture<Permits> timed = s.acquireAsync(1);
        Thread releaser = new Thread(() -> s.release(2), "releaser");
        releaser.start();
        assertTrue(inClaim.await(20, TimeUnit.SECONDS), "the release never reached the head");
        Thread timer = new Thread(() -> timed.completeExceptionally(new TimeoutException("late")), "timer");
        timer.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (timer.getState() != Thread.State.WAITING) { // parked on the semaphore's lock, after its CAS
            assertTrue(
                    System.nanoTime() < deadline,
                    "the timing-out thread never waited for the lock: " + timer.getState());
            Thread.sleep(1);
        }
        letGo.countDown();
        releaser.join(20_000);
        timer.join(20_000);
        assertTrue(head.isGranted());
        assertInstanceOf(
                TimeoutException.class,
                assertThrows(ExecutionException.class, timed::get).getCause());
        assertEquals(
                List.of("queued 1 ahead 0", "queued 1 ahead 1", "GRANTED 1 ahead 0", "TIMED_OUT 1 ahead 1"),
                log.snapshot());
        assertEquals(1, s.availablePermits(), "the declined grant's permit is free again");
        assertEquals(0, s.queueLength());
        s.release(1);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void orTimeoutOnAScopedFutureIsATimeout() throws Exception {
        Log log = new Log();
        Semaphore s = observed(2, log);
        assertTrue(s.tryAcquire(2));
        CompletableFuture<String> scoped = s.withPermitsAsync(1, () -> CompletableFuture.completedFuture("ran"))
                .orTimeout(5, TimeUnit.MILLISECONDS);
        ExecutionException timedOut = assertThrows(ExecutionException.class, scoped::get);
        assertInstanceOf(TimeoutException.class, timedOut.getCause());
        assertEquals(List.of("queued 1 ahead 0", "TIMED_OUT 1 ahead 0"), log.snapshot());
        assertEquals(0, s.queueLength());
        s.release(2);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void whoeverSeesAScopedFutureFailFindsItsWaitWithdrawn() {
        Log log = new Log();
        Semaphore s = observed(2, log);
        assertTrue(s.tryAcquire(2));
        List<String> seen = new ArrayList<>();
        CompletableFuture<String> timedOut = s.withPermitsAsync(1, () -> CompletableFuture.completedFuture("ran"));
        timedOut.whenComplete((v, e) -> seen.add("timeout: queue " + s.queueLength() + ", " + log.snapshot()));
        CompletableFuture<String> cancelled = s.withPermitsAsync(1, () -> CompletableFuture.completedFuture("ran"));
        cancelled.whenComplete((v, e) -> seen.add("cancel: queue " + s.queueLength()));
        CompletableFuture<String> failed = s.withPermitsAsync(2, () -> CompletableFuture.completedFuture("ran"));
        failed.whenComplete((v, e) -> seen.add("failure: queue " + s.queueLength() + ", " + e.getMessage()));

        assertTrue(timedOut.completeExceptionally(new TimeoutException("late")));
        assertTrue(cancelled.cancel(false));
        assertTrue(failed.completeExceptionally(new IllegalStateException("shed")));
        assertEquals(
                List.of(
                        "timeout: queue 2, [queued 1 ahead 0, queued 1 ahead 1, queued 2 ahead 2, TIMED_OUT 1 ahead 0]",
                        "cancel: queue 1",
                        "failure: queue 0, shed"),
                seen);
        assertInstanceOf(
                IllegalStateException.class,
                assertThrows(ExecutionException.class, failed::get).getCause());
        s.release(2);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void anInterruptedBlockingWaitIsCancelled() throws Exception {
        Log log = new Log();
        Semaphore s = observed(1, log);
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
        while (s.queueLength() == 0) {
            Thread.onSpinWait();
        }
        waiter.interrupt();
        waiter.join(TimeUnit.SECONDS.toMillis(20));
        assertInstanceOf(InterruptedException.class, thrown.get());
        assertEquals(List.of("queued 1 ahead 0", "CANCELLED 1 ahead 0"), log.snapshot());
    }

    @Test
    void anUpToGrantIsToldWhatItTook() throws Exception {
        Log log = new Log();
        Semaphore s = observed(8, log);
        assertTrue(s.tryAcquire(8));
        CompletableFuture<Permits> upTo = s.acquireUpToAsync(2, 6);
        s.release(5);
        assertEquals(5L, upTo.get().permits());
        assertEquals(List.of("queued 2 ahead 0", "GRANTED 5 ahead 0"), log.snapshot());
    }

    @Test
    void aRejectionIsToldAndNothingQueues() {
        Log log = new Log();
        Semaphore s = Semaphore.builder(2).maxQueueLength(1).listener(log).build();
        assertTrue(s.tryAcquire(2));
        s.acquireThen(1, new RecordingWaker());
        assertThrows(SemaphoreRejectedException.class, () -> s.acquireBlocking(2));
        ExecutionException failed =
                assertThrows(ExecutionException.class, () -> s.acquireAsync(1).get());
        assertInstanceOf(SemaphoreRejectedException.class, failed.getCause());
        assertEquals(List.of("queued 1 ahead 0", "rejected 2", "rejected 1"), log.snapshot());
        assertEquals(1, s.queueLength());
    }

    @Test
    void aThrowingListenerLosesNoPermitAndIsReported() throws Exception {
        AtomicInteger reported = new AtomicInteger();
        WaitListener throwing = new WaitListener() {
            @Override
            public void queued(long permits, int waitersAhead) {
                throw new IllegalStateException("queued listener failed");
            }

            @Override
            public void settled(long permits, WaitOutcome outcome, long waitNanos, int waitersAhead) {
                throw new IllegalStateException("settled listener failed");
            }
        };
        Log log = new Log();
        Semaphore s =
                Semaphore.builder(2).listener(WaitListener.all(throwing, log)).build();
        Thread me = Thread.currentThread();
        Thread.UncaughtExceptionHandler old = me.getUncaughtExceptionHandler();
        me.setUncaughtExceptionHandler((t, e) -> reported.incrementAndGet());
        try {
            assertTrue(s.tryAcquire(2));
            RecordingWaker w = new RecordingWaker();
            Acquisition a = s.acquireThen(2, w);
            s.release(2);
            assertTrue(a.isGranted());
            assertEquals(1, w.wakes.get());
            s.release(2);
            assertEquals(2, s.availablePermits());
            assertEquals(2, reported.get()); // queued and settled, each reported once
            assertEquals(List.of("queued 2 ahead 0", "GRANTED 2 ahead 0"), log.snapshot()); // the next one still told

            // The same listener alone: the waiter is still granted and woken.
            Semaphore alone = Semaphore.builder(1).listener(throwing).build();
            assertTrue(alone.tryAcquire(1));
            RecordingWaker w2 = new RecordingWaker();
            Acquisition b = alone.acquireThen(1, w2);
            alone.release(1);
            assertTrue(b.isGranted());
            assertEquals(1, w2.wakes.get());
            alone.release(1);
            assertEquals(1, alone.availablePermits());
        } finally {
            me.setUncaughtExceptionHandler(old);
        }
    }

    @Test
    void aMutexAndAnRwLockTellTheirWaits() throws Exception {
        Log mutexLog = new Log();
        Mutex mutex = Mutex.builder().listener(mutexLog).build();
        assertTrue(mutex.tryLock()); // at once: not observed
        CompletableFuture<Permits> waiting = mutex.lockAsync();
        mutex.unlock();
        waiting.get();
        mutex.unlock();
        assertEquals(List.of("queued 1 ahead 0", "GRANTED 1 ahead 0"), mutexLog.snapshot());

        Log rwLog = new Log();
        RwLock rw = RwLock.builder(4).listener(rwLog).build();
        assertTrue(rw.tryReadLock());
        CompletableFuture<RwLock.WritePermits> writer = rw.writeLockAsync(); // waits for the whole lock: weight 4
        CompletableFuture<Permits> reader = rw.readLockAsync(); // behind the writer: weight 1
        assertFalse(rw.tryWriteLockBlocking(Duration.ofMillis(5))); // times out behind both
        rw.readUnlock();
        writer.get();
        rw.writeUnlock();
        reader.get();
        rw.readUnlock();
        assertEquals(
                List.of(
                        "queued 4 ahead 0",
                        "queued 1 ahead 1",
                        "queued 4 ahead 2",
                        "TIMED_OUT 4 ahead 2",
                        "GRANTED 4 ahead 0",
                        "GRANTED 1 ahead 1"),
                rwLog.snapshot());
    }

    @Test
    void badListenerArgumentsAreRefusedWithTheirCall() {
        NullPointerException npe = assertThrows(
                NullPointerException.class, () -> Semaphore.builder(1).listener(null));
        assertTrue(npe.getMessage().startsWith("listener(null)"), npe.getMessage());
        IllegalArgumentException empty = assertThrows(IllegalArgumentException.class, WaitListener::all);
        assertTrue(empty.getMessage().contains("got 0"), empty.getMessage());
        NullPointerException mutex =
                assertThrows(NullPointerException.class, () -> Mutex.builder().listener(null));
        assertTrue(mutex.getMessage().startsWith("listener(null)"), mutex.getMessage());
        NullPointerException rw =
                assertThrows(NullPointerException.class, () -> RwLock.builder(4).listener(null));
        assertTrue(rw.getMessage().startsWith("listener(null)"), rw.getMessage());
        IllegalArgumentException readers = assertThrows(IllegalArgumentException.class, () -> RwLock.builder(0));
        assertTrue(readers.getMessage().startsWith("builder(0): maxReaders"), readers.getMessage());
        NullPointerException oneNull =
                assertThrows(NullPointerException.class, () -> WaitListener.all(new Log(), null));
        assertTrue(oneNull.getMessage().contains("listener 1 of 2 is null"), oneNull.getMessage());
    }

    /** Holds the permits a little, now and then, so the others have to queue behind. */
    private static void hold(ThreadLocalRandom r) {
        if (r.nextInt(4) == 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(r.nextInt(20_000));
        } else {
            Thread.yield();
        }
    }

    /** Many threads, every face, random cancels and timeouts: each queued wait settles exactly once. */
    @Test
    void everyQueuedWaitSettlesExactlyOnceUnderStress() throws Exception {
        AtomicLong queued = new AtomicLong();
        AtomicLong settled = new AtomicLong();
        AtomicLong granted = new AtomicLong();
        WaitListener counting = new WaitListener() {
            @Override
            public void queued(long permits, int waitersAhead) {
                queued.incrementAndGet();
            }

            @Override
            public void settled(long permits, WaitOutcome outcome, long waitNanos, int waitersAhead) {
                settled.incrementAndGet();
                if (outcome == WaitOutcome.GRANTED) {
                    granted.incrementAndGet();
                }
            }
        };
        Semaphore s = Semaphore.builder(5).listener(counting).build();
        AtomicLong grantsSeenByCallers = new AtomicLong();
        Thread[] threads = new Thread[4];
        java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
        for (int t = 0; t < threads.length; t++) {
            threads[t] = new Thread(() -> {
                ThreadLocalRandom r = ThreadLocalRandom.current();
                try {
                    start.await(); // all four contend from the first round, not one after another
                    for (int i = 0; i < 3_000; i++) {
                        long n = 1 + r.nextInt(4);
                        switch (r.nextInt(3)) {
                            case 0:
                                if (s.tryAcquireBlocking(n, Duration.ofNanos(r.nextInt(50_000)))) {
                                    grantsSeenByCallers.incrementAndGet();
                                    hold(r);
                                    s.release(n);
                                }
                                break;
                            case 1: {
                                CompletableFuture<Permits> f = s.acquireAsync(n);
                                if (r.nextBoolean() && f.cancel(false)) {
                                    break;
                                }
                                f.get();
                                grantsSeenByCallers.incrementAndGet();
                                hold(r);
                                s.release(n);
                                break;
                            }
                            default:
                                s.acquireBlocking(n);
                                grantsSeenByCallers.incrementAndGet();
                                hold(r);
                                s.release(n);
                                break;
                        }
                    }
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });
            threads[t].start();
        }
        start.countDown();
        for (Thread t : threads) {
            t.join(TimeUnit.MINUTES.toMillis(2));
            assertFalse(t.isAlive());
        }
        assertEquals(5, s.availablePermits());
        assertTrue(queued.get() > 0, "nothing ever queued: the test proves nothing");
        assertEquals(queued.get(), settled.get(), "a queued wait not settled exactly once");
        assertTrue(granted.get() <= grantsSeenByCallers.get());
    }
}
