// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * The core's internal lock when its holder does not let go quickly: threads that find it held
 * poll it briefly and then park; the unlocks wake them one after another, and nothing is lost. An
 * adapter's node whose claim() blocks (which its contract forbids) is used here only to hold the
 * lock long: an adapter's claim runs under the lock (a user's Waker.claim() never does).
 */
class InternalLockTest {

    /** An adapter's node whose claim() holds the semaphore's lock until {@code open} is counted down. */
    private static final class SlowClaim extends Acquisition {
        final CountDownLatch inClaim = new CountDownLatch(1);
        final CountDownLatch open = new CountDownLatch(1);
        volatile boolean woken;
        /** Whether the claim, once let go, declines the grant (the permits then go on). */
        volatile boolean declines;

        @Override
        protected boolean claim() {
            inClaim.countDown();
            try {
                return open.await(30, TimeUnit.SECONDS) && !declines;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }

        @Override
        protected void wake() {
            woken = true;
        }
    }

    /**
     * Starts a daemon thread: a thread that a broken lock leaves parked or spinning must not keep
     * the test JVM alive after the test has failed.
     */
    private static Thread daemon(Runnable body) {
        Thread t = new Thread(body);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /**
     * Starts a thread whose release grants the queued {@code slow} waiter: its claim() then holds
     * the semaphore's lock until {@code slow.open} is counted down. Returns once it is inside.
     */
    private static Thread releaseIntoSlowClaim(Semaphore s, SlowClaim slow) throws InterruptedException {
        Thread releaser = daemon(() -> s.release(1));
        assertTrue(slow.inClaim.await(10, TimeUnit.SECONDS));
        return releaser;
    }

    /**
     * Waits until {@code t} is parked on the core's lock (its blocker is the core: the only park in
     * these calls). If it never gets there, frees the lock (so a spinning thread stops) and fails.
     */
    private static void awaitParkedOnLock(Thread t, Semaphore s, SlowClaim slow) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!(t.getState() == Thread.State.WAITING
                && LockSupport.getBlocker(t) == s.core().internalLock())) {
            if (System.nanoTime() > deadline) {
                Thread.State state = t.getState();
                slow.open.countDown();
                fail(t + " never parked on the lock (spinning, or parked elsewhere): " + state);
            }
            Thread.sleep(1);
        }
    }

    @Test
    void threadsThatFindTheLockHeldLongParkAndAllGetItWhenItIsFreed() throws Exception {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1)); // held, so that the next acquisition queues
        SlowClaim slow = new SlowClaim();
        Acquisition first = s.startAcquisition(1, slow);
        Thread releaser = releaseIntoSlowClaim(s, slow);

        int n = 4;
        List<Thread> contenders = new ArrayList<>();
        List<CompletableFuture<Permits>> futures = java.util.Collections.synchronizedList(new ArrayList<>());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        for (int i = 0; i < n; i++) {
            Thread t = daemon(() -> {
                try {
                    futures.add(s.acquireAsync(1)); // enqueue needs the lock
                } catch (Throwable e) {
                    failure.set(e);
                }
            });
            contenders.add(t);
        }
        // Each contender polls briefly, then parks on the lock: acquireAsync parks nowhere else.
        for (Thread t : contenders) {
            awaitParkedOnLock(t, s, slow);
        }
        assertTrue(releaser.isAlive(), "the releaser is still inside the claim");

        slow.open.countDown(); // each unlock wakes one parked contender, whose unlock wakes the next
        releaser.join(10_000);
        for (Thread t : contenders) {
            t.join(10_000);
            assertFalse(t.isAlive(), t + " was never woken");
        }
        assertNull(failure.get());
        assertTrue(first.isGranted());
        assertTrue(slow.woken);
        assertEquals(n, s.queueLength(), "each contender queued once");
        assertEquals(0, s.availablePermits());

        // Permits are exact: each release grants the next contender, in order, then one is free.
        assertEquals(n, futures.size());
        s.release(1);
        int granted = 0;
        for (CompletableFuture<Permits> f : futures) {
            if (f.isDone()) {
                granted++;
            }
        }
        assertEquals(1, granted);
        for (int i = 1; i < n; i++) {
            s.release(1);
        }
        for (CompletableFuture<Permits> f : futures) {
            assertTrue(f.isDone() && !f.isCompletedExceptionally());
        }
        s.release(1);
        assertEquals(1, s.availablePermits());
        assertEquals(0, s.queueLength());
    }

    /**
     * Threads parked on the lock get it in the order they parked: five callers of acquireAsync(1)
     * that arrive one after another while a claim holds the lock join the wait queue in that order
     * (with a lock whose parked threads were a stack, they joined it newest first).
     */
    @Test
    void threadsParkedOnTheLockJoinTheQueueInTheOrderTheyArrived() throws Exception {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        SlowClaim slow = new SlowClaim();
        s.startAcquisition(1, slow);
        Thread releaser = releaseIntoSlowClaim(s, slow);
        int n = 5;
        List<CompletableFuture<CompletableFuture<Permits>>> futures = new ArrayList<>();
        List<Thread> contenders = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            CompletableFuture<CompletableFuture<Permits>> mine = new CompletableFuture<>();
            futures.add(mine);
            Thread t = daemon(() -> {
                try {
                    mine.complete(s.acquireAsync(1));
                } catch (Throwable e) {
                    mine.completeExceptionally(e);
                }
            });
            contenders.add(t);
            awaitParkedOnLock(t, s, slow); // parked before the next one arrives
        }
        slow.open.countDown();
        releaser.join(10_000);
        for (Thread t : contenders) {
            t.join(10_000);
            assertFalse(t.isAlive(), t + " was never woken");
        }
        assertEquals(n, s.queueLength());
        for (int i = 0; i < n; i++) {
            s.release(1); // grants the head of the queue
            for (int j = 0; j < n; j++) {
                assertEquals(j <= i, futures.get(j).get().isDone(), "after " + (i + 1) + " releases, contender " + j);
            }
        }
        s.release(1);
        assertEquals(1, s.availablePermits());
    }

    @Test
    void anInterruptedThreadParksOnTheLockInsteadOfSpinningAndKeepsItsInterrupt() throws Exception {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1)); // held, so that the next acquisition queues
        SlowClaim slow = new SlowClaim();
        s.startAcquisition(1, slow);
        Thread releaser = releaseIntoSlowClaim(s, slow);

        AtomicReference<CompletableFuture<Permits>> future = new AtomicReference<>();
        AtomicReference<Boolean> stillInterrupted = new AtomicReference<>();
        Thread interrupted = daemon(() -> {
            Thread.currentThread().interrupt(); // park() returns at once while this is set
            future.set(s.acquireAsync(1)); // needs the lock; acquireAsync ignores interrupts
            stillInterrupted.set(Thread.currentThread().isInterrupted());
        });
        awaitParkedOnLock(interrupted, s, slow);
        // Parked for good, not parking and returning in a loop: park() returns at once while the
        // interrupt status is set, so a lock that kept it would spin here, mostly RUNNABLE.
        for (int i = 0; i < 100; i++) {
            Thread.sleep(1);
            if (!(interrupted.getState() == Thread.State.WAITING
                    && LockSupport.getBlocker(interrupted) == s.core().internalLock())) {
                Thread.State state = interrupted.getState();
                slow.open.countDown();
                fail("the interrupted thread does not stay parked on the lock (spinning?): " + state);
            }
        }
        slow.open.countDown();
        interrupted.join(10_000);
        releaser.join(10_000);
        assertFalse(interrupted.isAlive());
        assertEquals(Boolean.TRUE, stillInterrupted.get(), "the interrupt is kept for the caller");
        assertFalse(future.get().isDone(), "queued behind the granted callback");
        s.release(1);
        assertTrue(future.get().isDone());
        s.release(1);
        assertEquals(1, s.availablePermits());
    }

    /**
     * A release that sees waiters, and then, once it holds the lock, finds nobody queued goes back
     * to the lock-free path. If a close() came in between, that path may complete closeAsync()'s
     * future, whose callbacks run on the releasing thread: they must run after its unlock (until
     * a8d8aca they ran under the lock, where a callback that touched the semaphore failed with
     * "must not call back"). The window is held open: the only waiter's claim holds the lock while
     * the closer and then the releaser park on it, and then declines, which empties the queue; the
     * lock's waiters are woken in FIFO order, so the closer is woken first and closes, and the releaser then
     * finds the queue empty and the semaphore closed. Whether the drain's callback is registered
     * before the releaser wakes is a race, which the closer almost always wins; so the scenario
     * runs until the callback has run on the releasing thread, and every run checks what the
     * callback saw.
     */
    @Test
    void aReleaseThatFindsTheQueueClosedOnceItHasTheLockCompletesTheDrainAfterUnlocking() throws Exception {
        int onReleaser = 0;
        for (int attempt = 0; attempt < 20 && onReleaser < 3; attempt++) {
            Semaphore s = new Semaphore(2);
            assertTrue(s.tryAcquire(2));
            SlowClaim slow = new SlowClaim();
            slow.declines = true; // its permit goes on, and the queue empties: QUEUED is cleared
            s.startAcquisition(1, slow);
            Thread first = releaseIntoSlowClaim(s, slow); // QUEUED stays set while the claim runs

            AtomicReference<Thread> ranOn = new AtomicReference<>();
            AtomicReference<Throwable> inCallback = new AtomicReference<>();
            CompletableFuture<Void> drainedSeen = new CompletableFuture<>();
            Thread closer = daemon(() -> {
                CompletableFuture<Void> drained = s.closeAsync(); // close() needs the lock too
                drained.thenRun(() -> {
                    ranOn.set(Thread.currentThread());
                    try {
                        s.close(); // takes the lock: fails if this thread still holds it
                    } catch (Throwable e) {
                        inCallback.set(e);
                    }
                    drainedSeen.complete(null);
                });
            });
            awaitParkedOnLock(closer, s, slow);
            Thread releaser = daemon(() -> s.release(1)); // sees QUEUED: needs the lock
            awaitParkedOnLock(releaser, s, slow);

            slow.open.countDown(); // unlock wakes the closer (parked first), then the releaser
            drainedSeen.get(10, TimeUnit.SECONDS);
            for (Thread t : List.of(first, releaser, closer)) {
                t.join(10_000);
                assertFalse(t.isAlive(), t + " is stuck");
            }
            assertNull(inCallback.get(), "the drain's callback ran under the lock, on " + ranOn.get());
            assertFalse(slow.woken, "the claim declined");
            assertEquals(2, s.availablePermits());
            assertTrue(s.isClosed());
            if (ranOn.get() == releaser) {
                onReleaser++;
            }
        }
        assertEquals(3, onReleaser, "the drain was completed by the late releaser in too few runs to test it");
    }
}
