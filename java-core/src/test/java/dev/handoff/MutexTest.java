// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * {@link Mutex}: every face (try, callback, future, blocking, timed), misuse, FIFO handoff,
 * cancellation, interrupt and timeout, and mutual exclusion under contention. Timeouts below are
 * hang guards only; nothing asserts on speed.
 */
class MutexTest {

    /** Upper bound for any single wait in these tests; reached only if something hangs. */
    static final long HANG_GUARD_SECONDS = 20;

    // ------------------------------------------------------------------ helpers

    /** Waits (politely) until {@code condition} holds; fails if it does not within the hang guard. */
    static void waitUntil(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(HANG_GUARD_SECONDS);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("gave up waiting for: " + what);
            }
            Thread.yield();
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                throw new AssertionError("interrupted while waiting for: " + what, e);
            }
        }
    }

    /** Spins until {@code flag} is set, without touching the interrupt flag; hang-guarded. */
    static void waitUntilUninterruptibly(AtomicBoolean flag) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(HANG_GUARD_SECONDS);
        while (!flag.get()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("gave up waiting for the flag");
            }
            Thread.onSpinWait();
            Thread.yield();
        }
    }

    /** Joins {@code t} and fails if it is still running after the hang guard. */
    static void joinOrFail(Thread t) throws InterruptedException {
        t.join(TimeUnit.SECONDS.toMillis(HANG_GUARD_SECONDS));
        assertFalse(t.isAlive(), () -> t.getName() + " hung");
    }

    /** Starts a platform thread that runs {@code body} and stores whatever it throws. */
    static Thread start(String name, AtomicReference<Throwable> failure, ThrowingRunnable body) {
        Thread t = new Thread(
                () -> {
                    try {
                        body.run();
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                },
                name);
        t.start();
        return t;
    }

    @FunctionalInterface
    interface ThrowingRunnable {
        void run() throws Exception;
    }

    private static void assertUnlockedAndIdle(Mutex m) {
        assertFalse(m.isLocked(), m::toString);
        assertEquals(0, m.queueLength(), m::toString);
        assertTrue(m.tryLock(), "the mutex should be free: " + m);
        m.unlock();
    }

    // ------------------------------------------------------------------ tryLock / unlock / isLocked

    @Test
    void newMutexIsUnlocked() {
        Mutex m = new Mutex();
        assertFalse(m.isLocked());
        assertEquals(0, m.queueLength());
        assertTrue(m.toString().contains("unlocked"), m.toString());
    }

    @Test
    void tryLockTakesAFreeMutexAndFailsOnAHeldOne() {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        assertTrue(m.isLocked());
        assertTrue(m.toString().contains("locked"), m.toString());
        assertFalse(m.tryLock(), "not reentrant, and only one holder");
        assertEquals(0, m.queueLength(), "tryLock never queues");
        m.unlock();
        assertFalse(m.isLocked());
        assertTrue(m.tryLock());
        m.unlock();
    }

    @Test
    void unlockWhenNotLockedThrowsNamingTheCallAndChangesNothing() {
        Mutex m = new Mutex();
        IllegalStateException e = assertThrows(IllegalStateException.class, m::unlock);
        assertTrue(e.getMessage().contains("unlock()"), e.getMessage());
        assertFalse(m.isLocked(), "a failed unlock must not lock or unbalance the mutex");
        assertUnlockedAndIdle(m);

        // Twice unlocked after one lock: the second fails and the mutex stays usable, not "2 free".
        assertTrue(m.tryLock());
        m.unlock();
        assertThrows(IllegalStateException.class, m::unlock);
        assertTrue(m.tryLock());
        assertFalse(m.tryLock(), "an over-unlock must not have created a second permit");
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    @Test
    void unlockWithWaitersHandsOverButAFailedUnlockDoesNotWakeAnyone() throws Exception {
        Mutex m = new Mutex();
        CompletableFuture<Permits> first = m.lockAsync();
        assertTrue(first.isDone());
        CompletableFuture<Permits> second = m.lockAsync();
        assertFalse(second.isDone());
        m.unlock(); // hands to `second`
        second.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
        assertTrue(m.isLocked());
        m.unlock();
        assertThrows(IllegalStateException.class, m::unlock);
        assertUnlockedAndIdle(m);
    }

    // ------------------------------------------------------------------ callback face

    @Test
    void lockWithWakerOnAFreeMutexIsGrantedAtOnceOnTheCallingThread() {
        Mutex m = new Mutex();
        RecordingWaker w = new RecordingWaker();
        Acquisition a = m.lockThen(w);
        assertTrue(a.isGranted());
        assertEquals(1, a.permits());
        assertEquals(1, w.claims.get());
        assertEquals(1, w.wakes.get(), "settles through the waker even when granted at once");
        assertSame(Thread.currentThread(), w.wokenOn);
        assertTrue(m.isLocked());
        assertFalse(a.cancel(), "a granted acquisition cannot be cancelled");
        assertTrue(m.isLocked());
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    @Test
    void lockWithWakerQueuesAndIsWokenByUnlockAfterTheHandoff() {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        AtomicBoolean lockedWhenWoken = new AtomicBoolean();
        AtomicReference<Acquisition> handle = new AtomicReference<>();
        AtomicBoolean grantedWhenWoken = new AtomicBoolean();
        Acquisition a = m.lockThen(() -> {
            lockedWhenWoken.set(m.isLocked());
            grantedWhenWoken.set(handle.get().isGranted());
        });
        handle.set(a);
        assertFalse(a.isGranted());
        assertEquals(1, m.queueLength());
        assertFalse(m.tryLock(), "no barging while someone waits");
        m.unlock();
        assertTrue(a.isGranted());
        assertTrue(lockedWhenWoken.get(), "the lock was handed over, never free in between");
        assertTrue(grantedWhenWoken.get());
        assertTrue(m.isLocked());
        assertEquals(0, m.queueLength());
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    @Test
    void lockWithNullWakerThrowsNamingTheCall() {
        Mutex m = new Mutex();
        NullPointerException e = assertThrows(NullPointerException.class, () -> m.lockThen(null));
        assertTrue(e.getMessage().contains("lockThen(null)"), e.getMessage());
        assertUnlockedAndIdle(m);
    }

    @Test
    void cancelledCallbackWaitIsNeverWokenAndHoldsNothing() {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        RecordingWaker w = new RecordingWaker();
        Acquisition a = m.lockThen(w);
        assertEquals(1, m.queueLength());
        assertTrue(a.cancel());
        assertFalse(a.cancel(), "idempotent");
        assertEquals(0, m.queueLength());
        m.unlock();
        assertEquals(0, w.claims.get());
        assertEquals(0, w.wakes.get());
        assertFalse(a.isGranted());
        assertUnlockedAndIdle(m);
    }

    @Test
    void decliningWakerPassesTheLockToTheNextWaiter() {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        RecordingWaker gone = new RecordingWaker();
        gone.declineClaim = true;
        RecordingWaker next = new RecordingWaker();
        Acquisition a = m.lockThen(gone);
        Acquisition b = m.lockThen(next);
        m.unlock();
        assertEquals(1, gone.claims.get());
        assertEquals(0, gone.wakes.get(), "a declined grant is never woken");
        assertFalse(a.isGranted());
        assertTrue(b.isGranted());
        assertEquals(1, next.wakes.get());
        m.unlock();

        // A declining waker alone in the queue: the lock becomes free, not held by nobody.
        assertTrue(m.tryLock());
        RecordingWaker alone = new RecordingWaker();
        alone.declineClaim = true;
        m.lockThen(alone);
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    // ------------------------------------------------------------------ future face

    @Test
    void lockAsyncCompletesAtOnceWhenFreeAndOnHandoffOtherwise() throws Exception {
        Mutex m = new Mutex();
        CompletableFuture<Permits> a = m.lockAsync();
        assertTrue(a.isDone());
        assertEquals(1, a.getNow(null).permits());
        CompletableFuture<Permits> b = m.lockAsync();
        CompletableFuture<Permits> c = m.lockAsync();
        assertFalse(b.isDone());
        assertFalse(c.isDone());
        assertEquals(2, m.queueLength());
        m.unlock();
        b.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
        assertFalse(c.isDone(), "one unlock hands the lock to exactly one waiter");
        m.unlock();
        c.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    @Test
    void cancelledLockAsyncLeavesTheQueueAndTheNextWaiterGetsTheLock() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        CompletableFuture<Permits> cancelled = m.lockAsync();
        CompletableFuture<Permits> next = m.lockAsync();
        assertTrue(cancelled.cancel(true));
        assertTrue(cancelled.isCancelled());
        assertThrows(CancellationException.class, cancelled::join);
        assertEquals(1, m.queueLength());
        m.unlock();
        next.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
        assertTrue(m.isLocked());
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    @Test
    void cancellingAGrantedLockAsyncFailsAndTheLockIsStillHeld() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        CompletableFuture<Permits> f = m.lockAsync();
        m.unlock();
        f.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
        assertFalse(f.cancel(true), "the grant won; cancel must not pretend otherwise");
        assertFalse(f.isCancelled());
        assertTrue(m.isLocked(), "the caller still holds the lock and must unlock it");
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    /**
     * The cancel of a waiting {@code lockAsync} future races the unlock that would grant it. Exactly
     * one wins: either the future is cancelled and the lock ends up free (nobody holds it), or the
     * future completes normally and its caller holds the lock.
     */
    @Test
    void cancelledLockAsyncNeverHoldsTheLockEvenWhenRacingTheUnlock() throws Exception {
        int cancelledWins = 0;
        int grantWins = 0;
        ExecutorService unlocker = Executors.newSingleThreadExecutor();
        try {
            for (int round = 0; round < 3_000; round++) {
                Mutex m = new Mutex();
                assertTrue(m.tryLock());
                CompletableFuture<Permits> f = m.lockAsync();
                assertFalse(f.isDone());
                CyclicBarrier go = new CyclicBarrier(2);
                Future<?> u = unlocker.submit(() -> {
                    go.await();
                    m.unlock();
                    return null;
                });
                go.await(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
                boolean cancelled = f.cancel(true);
                u.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
                if (cancelled) {
                    cancelledWins++;
                    assertTrue(f.isCancelled());
                    assertFalse(m.isLocked(), "round " + round + ": a cancelled future holds the lock: " + m);
                } else {
                    grantWins++;
                    f.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS); // completes normally, never cancelled
                    assertFalse(f.isCancelled());
                    assertTrue(m.isLocked(), "round " + round + ": granted but the lock is free: " + m);
                    m.unlock();
                }
                assertUnlockedAndIdle(m);
            }
        } finally {
            unlocker.shutdownNow();
        }
        assertEquals(3_000, cancelledWins + grantWins);
    }

    /**
     * A cancel issued from inside a waker, right after that waker's unlock granted the future: the
     * future's completion may run before the cancel or after it (wake-ups started inside a wake-up
     * may run nested or be deferred to the outermost call). Either way the grant was decided
     * first, so {@code cancel} must return false and the future's caller must hold the lock.
     * (RwLockTest hits the window between the grant and the completion deterministically, with
     * two grants in one release.)
     */
    @Test
    void cancelFromInsideTheWakerWhoseUnlockGrantedTheFutureLoses() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        AtomicReference<CompletableFuture<Permits>> next = new AtomicReference<>();
        AtomicReference<Boolean> cancelResult = new AtomicReference<>();
        Acquisition first = m.lockThen(() -> {
            m.unlock(); // grants `next`
            cancelResult.set(next.get().cancel(true));
        });
        next.set(m.lockAsync());
        m.unlock(); // grants `first`, whose waker runs on this thread
        assertTrue(first.isGranted());
        assertEquals(Boolean.FALSE, cancelResult.get(), "the grant came before the cancel, so the cancel must lose");
        next.get().get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
        assertFalse(next.get().isCancelled());
        assertTrue(m.isLocked(), "the future was granted, so its caller holds the lock: " + m);
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    @Test
    void failingALockAsyncFutureByHandWithdrawsItsWaitAndCompletingByHandIsRefused() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        CompletableFuture<Permits> failedByHand = m.lockAsync();
        CompletableFuture<Permits> next = m.lockAsync();
        assertTrue(failedByHand.completeExceptionally(new RuntimeException("gave up")));
        assertEquals(1, m.queueLength(), "withdrawn from the queue");
        // A normal completion must mean "granted": completing a waiting future by hand is refused.
        assertThrows(UnsupportedOperationException.class, () -> next.complete(null));
        assertFalse(next.isDone());
        assertEquals(1, m.queueLength(), "the refused completion changed nothing");
        m.unlock();
        next.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
        assertTrue(m.isLocked());
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    // ------------------------------------------------------------------ FIFO

    @Test
    void waitersOfEveryFaceAreServedInArrivalOrder() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        List<String> log = new ArrayList<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();

        m.lockThen(new RecordingWaker("callback-0", log));
        waitUntil(() -> m.queueLength() == 1, "callback-0 queued");
        m.lockAsync().thenRun(() -> {
            synchronized (log) {
                log.add("async-1");
            }
        });
        waitUntil(() -> m.queueLength() == 2, "async-1 queued");
        Thread blocking = start("blocking-2", failure, () -> {
            m.lockBlocking();
            synchronized (log) {
                log.add("blocking-2");
            }
        });
        waitUntil(() -> m.queueLength() == 3, "blocking-2 queued");
        Thread timed = start("timed-3", failure, () -> {
            assertTrue(m.tryLockBlocking(Duration.ofSeconds(HANG_GUARD_SECONDS * 3)));
            synchronized (log) {
                log.add("timed-3");
            }
        });
        waitUntil(() -> m.queueLength() == 4, "timed-3 queued");
        m.lockThen(new RecordingWaker("callback-4", log));
        assertEquals(5, m.queueLength());

        List<String> expected = List.of("callback-0", "async-1", "blocking-2", "timed-3", "callback-4");
        for (int i = 0; i < expected.size(); i++) {
            int served = i + 1;
            m.unlock();
            waitUntil(
                    () -> {
                        synchronized (log) {
                            return log.size() == served;
                        }
                    },
                    "waiter " + i + " served");
            assertTrue(m.isLocked(), "handed over, never free in between");
            synchronized (log) {
                assertEquals(expected.subList(0, served), log);
            }
        }
        joinOrFail(blocking);
        joinOrFail(timed);
        assertNull(failure.get());
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    @Test
    void manyBlockingThreadsAreServedInTheOrderTheyQueued() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        List<Integer> order = new ArrayList<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            int id = i;
            threads.add(start("waiter-" + i, failure, () -> {
                m.lockBlocking();
                synchronized (order) {
                    order.add(id);
                }
                m.unlock();
            }));
            int queued = i + 1;
            waitUntil(() -> m.queueLength() == queued, "waiter " + i + " queued");
        }
        m.unlock();
        for (Thread t : threads) {
            joinOrFail(t);
        }
        assertNull(failure.get());
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7), order);
        assertUnlockedAndIdle(m);
    }

    // ------------------------------------------------------------------ blocking face

    @Test
    void lockBlockingTakesAFreeMutexAtOnce() throws Exception {
        Mutex m = new Mutex();
        m.lockBlocking();
        assertTrue(m.isLocked());
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    @Test
    void lockBlockingWaitsForUnlockFromAnotherThread() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        CountDownLatch got = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = start("blocked", failure, () -> {
            m.lockBlocking();
            got.countDown();
        });
        waitUntil(() -> m.queueLength() == 1, "blocked thread queued");
        assertEquals(1, got.getCount());
        m.unlock(); // not owned by a thread: the lock moves to the blocked thread
        assertTrue(got.await(HANG_GUARD_SECONDS, TimeUnit.SECONDS));
        joinOrFail(t);
        assertNull(failure.get());
        assertTrue(m.isLocked(), "the other thread holds it; any thread may unlock");
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    @Test
    void interruptedLockBlockingWithdrawsAndHoldsNothing() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicBoolean flagAfter = new AtomicBoolean(true);
        Thread t = new Thread(
                () -> {
                    try {
                        m.lockBlocking();
                    } catch (Throwable e) {
                        thrown.set(e);
                        flagAfter.set(Thread.currentThread().isInterrupted());
                    }
                },
                "interrupted-waiter");
        t.start();
        waitUntil(() -> m.queueLength() == 1, "waiter queued");
        CompletableFuture<Permits> behind = m.lockAsync();
        t.interrupt();
        joinOrFail(t);
        assertTrue(thrown.get() instanceof InterruptedException, String.valueOf(thrown.get()));
        assertTrue(
                thrown.get().getMessage().contains("lockBlocking()"),
                thrown.get().getMessage());
        assertFalse(flagAfter.get(), "InterruptedException clears the interrupt flag");
        assertEquals(1, m.queueLength(), "only the future behind is still waiting");
        m.unlock();
        behind.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS); // the withdrawn waiter was skipped
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    @Test
    void lockBlockingOnAnInterruptedThreadThrowsAndHoldsNothing() {
        Mutex m = new Mutex();
        Thread.currentThread().interrupt();
        try {
            assertThrows(InterruptedException.class, m::lockBlocking);
        } finally {
            Thread.interrupted();
        }
        assertUnlockedAndIdle(m);
    }

    /**
     * Interrupt races the unlock that grants a blocked {@code lockBlocking}. Either it throws
     * InterruptedException holding nothing, or it returns holding the lock with the interrupt flag
     * set; never both, never neither.
     */
    @Test
    void interruptRacingTheGrantEitherThrowsHoldingNothingOrReturnsHoldingWithTheFlagSet() throws Exception {
        int interruptedWins = 0;
        int grantWins = 0;
        for (int round = 0; round < 300; round++) {
            Mutex m = new Mutex();
            assertTrue(m.tryLock());
            AtomicReference<String> outcome = new AtomicReference<>();
            AtomicBoolean interruptSent = new AtomicBoolean();
            Thread t = new Thread(
                    () -> {
                        try {
                            m.lockBlocking();
                            // The interrupt may land after the return; either way it must not be lost.
                            // (Not an interruptible wait: the flag is what we are looking at.)
                            waitUntilUninterruptibly(interruptSent);
                            outcome.set(Thread.interrupted() ? "granted+flag" : "granted-no-flag");
                        } catch (InterruptedException e) {
                            outcome.set("interrupted");
                        }
                    },
                    "racer");
            t.start();
            waitUntil(() -> m.queueLength() == 1, "racer queued");
            CyclicBarrier go = new CyclicBarrier(2);
            Thread unlocker = new Thread(
                    () -> {
                        try {
                            go.await();
                        } catch (Exception e) {
                            throw new AssertionError(e);
                        }
                        m.unlock();
                    },
                    "unlocker");
            unlocker.start();
            go.await(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
            t.interrupt();
            interruptSent.set(true);
            joinOrFail(unlocker);
            joinOrFail(t);
            switch (outcome.get()) {
                case "interrupted":
                    interruptedWins++;
                    assertFalse(m.isLocked(), "round " + round + ": interrupted but the lock is held: " + m);
                    break;
                case "granted+flag":
                    grantWins++;
                    assertTrue(m.isLocked(), "round " + round + ": returned but the lock is free: " + m);
                    m.unlock();
                    break;
                default:
                    throw new AssertionError("round " + round + ": " + outcome.get());
            }
            assertUnlockedAndIdle(m);
        }
        assertEquals(300, interruptedWins + grantWins);
    }

    // ------------------------------------------------------------------ timed face

    @Test
    void tryLockWithTimeoutTakesAFreeMutexAndGivesUpOnAHeldOne() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLockBlocking(Duration.ofSeconds(1)));
        assertFalse(m.tryLockBlocking(Duration.ofMillis(20)), "held by this caller; not reentrant");
        assertEquals(0, m.queueLength(), "a timed-out wait leaves the queue");
        assertTrue(m.isLocked());
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    @Test
    void tryLockWithZeroOrNegativeTimeoutDoesNotWait() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLockBlocking(Duration.ZERO));
        assertFalse(m.tryLockBlocking(Duration.ZERO));
        assertFalse(m.tryLockBlocking(Duration.ofSeconds(-5)));
        assertFalse(m.tryLockBlocking(Duration.ofSeconds(Long.MIN_VALUE)), "saturates instead of overflowing");
        assertEquals(0, m.queueLength());
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    @Test
    void tryLockWithNullTimeoutThrowsNamingTheCall() {
        Mutex m = new Mutex();
        NullPointerException e = assertThrows(NullPointerException.class, () -> m.tryLockBlocking(null));
        assertTrue(e.getMessage().contains("tryLockBlocking(null)"), e.getMessage());
        assertUnlockedAndIdle(m);
    }

    @Test
    void tryLockWithTimeoutGetsTheLockWhenUnlockedInTime() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        AtomicBoolean got = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t =
                start("timed", failure, () -> got.set(m.tryLockBlocking(Duration.ofSeconds(HANG_GUARD_SECONDS * 3))));
        waitUntil(() -> m.queueLength() == 1, "timed waiter queued");
        m.unlock();
        joinOrFail(t);
        assertNull(failure.get());
        assertTrue(got.get());
        assertTrue(m.isLocked());
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    @Test
    void timedOutWaiterIsSkippedByTheNextUnlock() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        AtomicReference<Boolean> got = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = start("times-out", failure, () -> got.set(m.tryLockBlocking(Duration.ofMillis(50))));
        joinOrFail(t);
        assertNull(failure.get());
        assertEquals(Boolean.FALSE, got.get());
        assertEquals(0, m.queueLength());
        CompletableFuture<Permits> next = m.lockAsync();
        m.unlock();
        next.get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    @Test
    void interruptedTimedTryLockThrowsAndHoldsNothing() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread t = new Thread(
                () -> {
                    try {
                        m.tryLockBlocking(Duration.ofSeconds(HANG_GUARD_SECONDS * 3));
                    } catch (Throwable e) {
                        thrown.set(e);
                    }
                },
                "timed-interrupted");
        t.start();
        waitUntil(() -> m.queueLength() == 1, "timed waiter queued");
        t.interrupt();
        joinOrFail(t);
        assertTrue(thrown.get() instanceof InterruptedException, String.valueOf(thrown.get()));
        assertTrue(
                thrown.get().getMessage().contains("tryLockBlocking("),
                thrown.get().getMessage());
        assertEquals(0, m.queueLength());
        m.unlock();
        assertUnlockedAndIdle(m);
    }

    // ------------------------------------------------------------------ mutual exclusion

    /** A plain (non-atomic) counter: lost updates would show if two threads were ever inside. */
    private static final class Counter {
        long value;
        int inside;
        int maxInside;

        void enterAndIncrement() {
            inside++;
            maxInside = Math.max(maxInside, inside);
            long v = value;
            Thread.yield();
            value = v + 1;
            inside--;
        }
    }

    @Test
    void fourThreadsTimesAThousandWritesAreExactWithLockBlocking() throws Exception {
        Mutex m = new Mutex();
        Counter c = new Counter();
        runFourThreads(i -> {
            m.lockBlocking();
            try {
                c.enterAndIncrement();
            } finally {
                m.unlock();
            }
        });
        assertEquals(4_000, c.value);
        assertEquals(1, c.maxInside);
        assertUnlockedAndIdle(m);
    }

    @Test
    void fourThreadsTimesAThousandWritesAreExactMixingEveryFace() throws Exception {
        Mutex m = new Mutex();
        Counter c = new Counter();
        runFourThreads(i -> {
            switch (i % 4) {
                case 0:
                    m.lockBlocking();
                    break;
                case 1:
                    m.lockAsync().get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
                    break;
                case 2:
                    assertTrue(m.tryLockBlocking(Duration.ofSeconds(HANG_GUARD_SECONDS * 3)));
                    break;
                default:
                    CountDownLatch woken = new CountDownLatch(1);
                    Acquisition a = m.lockThen(woken::countDown);
                    assertTrue(woken.await(HANG_GUARD_SECONDS, TimeUnit.SECONDS));
                    assertTrue(a.isGranted());
                    break;
            }
            try {
                c.enterAndIncrement();
            } finally {
                m.unlock();
            }
        });
        assertEquals(4_000, c.value);
        assertEquals(1, c.maxInside);
        assertUnlockedAndIdle(m);
    }

    @FunctionalInterface
    interface Step {
        void run(int i) throws Exception;
    }

    /** Runs {@code step} 1000 times on each of 4 platform threads, started together. */
    static void runFourThreads(Step step) throws Exception {
        CyclicBarrier start = new CyclicBarrier(4);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            int offset = t;
            threads.add(start("writer-" + t, failure, () -> {
                start.await();
                for (int i = 0; i < 1000; i++) {
                    step.run(i + offset);
                }
            }));
        }
        for (Thread t : threads) {
            joinOrFail(t);
        }
        if (failure.get() != null) {
            throw new AssertionError("a worker failed", failure.get());
        }
    }

    @Test
    void virtualThreadsShareTheMutexExactly() throws Exception {
        assumeTrue(Runtime.version().feature() >= 21, "virtual threads need JDK 21+");
        Method factory = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        ExecutorService executor = (ExecutorService) factory.invoke(null);
        Mutex m = new Mutex();
        Counter c = new Counter();
        List<Future<?>> tasks = new ArrayList<>();
        try {
            for (int i = 0; i < 1_000; i++) {
                tasks.add(executor.submit(() -> {
                    for (int k = 0; k < 4; k++) {
                        m.lockBlocking();
                        try {
                            c.enterAndIncrement();
                        } finally {
                            m.unlock();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : tasks) {
                try {
                    f.get(HANG_GUARD_SECONDS * 3, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    throw new AssertionError(e.getCause());
                }
            }
        } finally {
            executor.shutdownNow();
        }
        assertEquals(4_000, c.value);
        assertEquals(1, c.maxInside);
        assertUnlockedAndIdle(m);
    }
}
