// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The calls that hand permits on at once but run the wake-ups they cause on an executor:
 * {@link Semaphore#release(long, Executor)}, {@link Mutex#unlock(Executor)},
 * {@link RwLock#readUnlock(Executor)}, {@link RwLock#writeUnlock(Executor)} and
 * {@link Acquisition#cancel(Executor)}. The state changes before the call returns; only the
 * {@code wake()} calls move, in FIFO order, and a refusing executor loses none.
 */
class WakeExecutorTest {

    /** An executor that only queues: the test runs the tasks when it wants to. */
    static final class Queued implements Executor {
        final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();

        @Override
        public void execute(Runnable task) {
            tasks.add(task);
        }

        void runAll() {
            for (Runnable r; (r = tasks.poll()) != null; ) {
                r.run();
            }
        }
    }

    private static final Executor REFUSING = task -> {
        throw new RejectedExecutionException("closed");
    };

    @Test
    void releaseHandsPermitsOnAtOnceButWakesOnTheExecutor() {
        List<String> log = new ArrayList<>();
        Semaphore s = new Semaphore(4);
        assertTrue(s.tryAcquire(4));
        RecordingWaker first = new RecordingWaker("first", log);
        RecordingWaker second = new RecordingWaker("second", log);
        RecordingWaker third = new RecordingWaker("third", log);
        Acquisition a1 = s.acquireThen(2, first);
        Acquisition a2 = s.acquireThen(1, second);
        Acquisition a3 = s.acquireThen(3, third);

        Queued wakes = new Queued();
        s.release(4, wakes);

        // Handed on before the call returned: claims ran here, the third got a partial share.
        assertTrue(a1.isGranted());
        assertTrue(a2.isGranted());
        assertFalse(a3.isGranted());
        assertEquals(1, first.claims.get());
        assertEquals(1, second.claims.get());
        assertEquals(0, s.availablePermits());
        assertEquals(1, s.queueLength());
        assertEquals(0, first.wakes.get() + second.wakes.get(), "no waker ran on the releasing thread");
        assertEquals(1, wakes.tasks.size(), "the wake-ups of one release are one task");

        Thread runner = new Thread(wakes::runAll, "wake-runner");
        runner.start();
        join(runner);
        assertSame(runner, first.wokenOn);
        assertSame(runner, second.wokenOn);
        assertEquals(List.of("first", "second"), log, "FIFO order");
        assertEquals(0, third.wakes.get());

        s.release(3, wakes); // the first two give back 2 + 1: the third has its 1 partial + 2
        assertTrue(a3.isGranted());
        assertEquals(0, third.wakes.get());
        wakes.runAll();
        assertEquals(1, third.wakes.get());
        s.release(3);
        assertEquals(4, s.availablePermits());
    }

    @Test
    void releaseThatCompletesNobodyLeavesTheExecutorUnused() {
        Semaphore s = new Semaphore(4);
        assertTrue(s.tryAcquire(3));
        Queued wakes = new Queued();
        s.release(1, wakes); // nobody waits: the lock-free path
        assertEquals(2, s.availablePermits());
        RecordingWaker heavy = new RecordingWaker();
        Acquisition a = s.acquireThen(4, heavy);
        s.release(1, wakes); // a partial share for the head only
        assertFalse(a.isGranted());
        assertTrue(wakes.tasks.isEmpty());
        s.release(1, wakes);
        assertTrue(a.isGranted());
        assertEquals(1, wakes.tasks.size());
        wakes.runAll();
        assertEquals(1, heavy.wakes.get());
    }

    @Test
    void refusingExecutorRunsTheWakersHere() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        RecordingWaker w = new RecordingWaker();
        Acquisition a = s.acquireThen(1, w);
        s.release(1, REFUSING);
        assertTrue(a.isGranted());
        assertEquals(1, w.wakes.get());
        assertSame(Thread.currentThread(), w.wokenOn);
    }

    @Test
    void badArgumentsThrowAndChangeNothing() {
        Semaphore s = new Semaphore(3);
        assertTrue(s.tryAcquire(2));
        RecordingWaker w = new RecordingWaker();
        Acquisition a = s.acquireThen(3, w);
        Queued wakes = new Queued();

        NullPointerException npe = assertThrows(NullPointerException.class, () -> s.release(1, null));
        assertEquals("release(1, null): the executor is null", npe.getMessage());
        assertThrows(NullPointerException.class, () -> s.release(0, null));
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class, () -> s.release(-1, wakes));
        assertEquals("release(-1, executor): the number of permits must not be negative", negative.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> s.release(-1, null),
                "the count is checked first, as by acquire(n, waker)");
        IllegalStateException over = assertThrows(IllegalStateException.class, () -> s.release(3, wakes));
        assertEquals(
                "release(3, executor): exceeds the 2 permits held (capacity 3), so nothing was released",
                over.getMessage());
        s.release(0, wakes);

        assertFalse(a.isGranted());
        assertEquals(0, w.claims.get());
        assertEquals(0, s.availablePermits()); // the free permit went to the head as a partial share
        assertEquals(1, s.queueLength());
        assertTrue(wakes.tasks.isEmpty());
        s.release(2, wakes);
        assertTrue(a.isGranted());
    }

    @Test
    void aThreadParkedInABlockingAcquireIsUnparkedByTheCallNotTheExecutor() throws Exception {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        CountDownLatch done = new CountDownLatch(1);
        Thread blocked = blockedAcquirer(s, done, "blocked");
        awaitQueueLength(s, 1);
        RecordingWaker callback = new RecordingWaker();
        Acquisition behind = s.acquireThen(1, callback);

        Queued never = new Queued(); // as a pool whose only threads are the parked ones: never runs
        s.release(2, never);
        assertTrue(done.await(20, TimeUnit.SECONDS), "the parked thread was unparked by release itself");
        join(blocked);
        assertTrue(behind.isGranted());
        assertEquals(0, callback.wakes.get());
        assertEquals(1, never.tasks.size(), "only the callback went to the executor");
        never.runAll();
        assertEquals(1, callback.wakes.get());

        // The same for a withdrawal whose partial permits complete a parked thread.
        RecordingWaker heavy = new RecordingWaker();
        Acquisition head = s.acquireThen(2, heavy);
        CountDownLatch second = new CountDownLatch(1);
        Thread blockedAgain = blockedAcquirer(s, second, "blocked-again");
        awaitQueueLength(s, 2);
        s.release(1); // a partial share for the head
        assertTrue(head.cancel(never));
        assertTrue(second.await(20, TimeUnit.SECONDS));
        join(blockedAgain);
        assertTrue(never.tasks.isEmpty(), "nobody else was woken: the executor is not used");
        s.release(2); // the callback's 1, the second thread's 1
        assertEquals(2, s.availablePermits());
    }

    @Test
    void anExecutorThatRunsTheTaskAndThenThrowsWakesEachWaiterOnce() {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        RecordingWaker a = new RecordingWaker();
        RecordingWaker b = new RecordingWaker();
        Acquisition first = s.acquireThen(1, a);
        Acquisition second = s.acquireThen(1, b);
        Executor runsThenThrows = task -> {
            task.run();
            throw new RejectedExecutionException("ran it, then refused");
        };
        s.release(2, runsThenThrows);
        assertTrue(first.isGranted() && second.isGranted());
        assertEquals(1, a.wakes.get());
        assertEquals(1, b.wakes.get());
    }

    @Test
    void aReleaseWhoseOnlyWaiterDeclinedLeavesTheExecutorUnused() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        RecordingWaker gone = new RecordingWaker();
        gone.declineClaim = true;
        Acquisition a = s.acquireThen(1, gone);
        Queued wakes = new Queued();
        s.release(1, wakes);
        assertFalse(a.isGranted());
        assertEquals(1, gone.claims.get());
        assertTrue(wakes.tasks.isEmpty());
        assertEquals(1, s.availablePermits(), "the declined permit is free again");
    }

    @Test
    void theListenerIsToldBeforeTheReleaseReturns() {
        List<WaitOutcome> outcomes = new ArrayList<>();
        Semaphore s = Semaphore.builder(1)
                .listener(new WaitListener() {
                    @Override
                    public void settled(long permits, WaitOutcome outcome, long waitNanos, int waitersAhead) {
                        outcomes.add(outcome);
                    }
                })
                .build();
        assertTrue(s.tryAcquire(1));
        Acquisition a = s.acquireThen(1, new RecordingWaker());
        Queued wakes = new Queued();
        s.release(1, wakes);
        assertTrue(a.isGranted());
        assertEquals(List.of(WaitOutcome.GRANTED), outcomes);
        assertEquals(1, wakes.tasks.size());
    }

    @Test
    void mutexUnlockHandsTheLockOverButWakesOnTheExecutor() {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        RecordingWaker w = new RecordingWaker();
        Acquisition a = m.lockThen(w);
        Queued wakes = new Queued();
        m.unlock(wakes);
        assertTrue(a.isGranted());
        assertTrue(m.isLocked());
        assertEquals(0, w.wakes.get());
        wakes.runAll();
        assertEquals(1, w.wakes.get());

        m.unlock(wakes); // nobody waits
        assertFalse(m.isLocked());
        assertTrue(wakes.tasks.isEmpty());
        IllegalStateException notLocked = assertThrows(IllegalStateException.class, () -> m.unlock(wakes));
        assertEquals("unlock(executor): the mutex is not locked", notLocked.getMessage());
        NullPointerException npe = assertThrows(NullPointerException.class, () -> m.unlock(null));
        assertEquals("unlock(null): the executor is null", npe.getMessage());
        assertFalse(m.isLocked());
    }

    @Test
    void rwLockUnlocksHandTheLockOverButWakeOnTheExecutor() {
        RwLock l = new RwLock(2);
        assertTrue(l.tryWriteLock());
        RecordingWaker r1 = new RecordingWaker();
        RecordingWaker r2 = new RecordingWaker();
        RecordingWaker writer = new RecordingWaker();
        Acquisition read1 = l.readLockThen(r1);
        Acquisition read2 = l.readLockThen(r2);
        Acquisition write = l.writeLockThen(writer);
        Queued wakes = new Queued();

        l.writeUnlock(wakes);
        assertFalse(l.isWriteLocked());
        assertTrue(read1.isGranted());
        assertTrue(read2.isGranted());
        assertEquals(0, r1.wakes.get() + r2.wakes.get());
        wakes.runAll();
        assertEquals(1, r1.wakes.get());
        assertEquals(1, r2.wakes.get());

        l.readUnlock(wakes);
        assertFalse(write.isGranted()); // a partial share: one read lock is still held
        assertTrue(wakes.tasks.isEmpty());
        l.readUnlock(wakes);
        assertTrue(write.isGranted());
        assertTrue(l.isWriteLocked());
        assertEquals(0, writer.wakes.get());
        wakes.runAll();
        assertEquals(1, writer.wakes.get());

        IllegalStateException readWhileWriting = assertThrows(IllegalStateException.class, () -> l.readUnlock(wakes));
        assertEquals("readUnlock(executor): the lock is write-locked, not read-locked", readWhileWriting.getMessage());
        assertThrows(NullPointerException.class, () -> l.writeUnlock(null));
        assertTrue(l.isWriteLocked());
        l.writeUnlock(wakes);
        IllegalStateException notWriting = assertThrows(IllegalStateException.class, () -> l.writeUnlock(wakes));
        assertEquals("writeUnlock(executor): the lock is not write-locked", notWriting.getMessage());
        IllegalStateException notReading = assertThrows(IllegalStateException.class, () -> l.readUnlock(wakes));
        assertEquals("readUnlock(executor): the lock is not read-locked", notReading.getMessage());
        NullPointerException npe = assertThrows(NullPointerException.class, () -> l.readUnlock(null));
        assertEquals("readUnlock(null): the executor is null", npe.getMessage());
        assertTrue(l.tryWriteLock()); // nothing held, nothing changed by the refusals
        assertTrue(wakes.tasks.isEmpty());
    }

    @Test
    void cancelOfAPartiallyServedHeadWakesTheNextOnTheExecutor() {
        Semaphore s = new Semaphore(3);
        assertTrue(s.tryAcquire(3));
        RecordingWaker heavy = new RecordingWaker();
        RecordingWaker light = new RecordingWaker();
        Acquisition head = s.acquireThen(3, heavy);
        Acquisition next = s.acquireThen(1, light);
        s.release(1); // a partial share for the head
        Queued wakes = new Queued();

        assertTrue(head.cancel(wakes));
        assertTrue(next.isGranted(), "the head's partial permit went on before cancel returned");
        assertEquals(0, light.wakes.get());
        wakes.runAll();
        assertEquals(1, light.wakes.get());
        assertEquals(0, heavy.wakes.get());
        assertFalse(head.cancel(wakes));
        assertThrows(NullPointerException.class, () -> next.cancel(null));

        // Held now: 2 of the first tryAcquire, 1 by `next`. A second partially served head,
        // withdrawn with an executor that refuses: the next waker runs here, none is lost.
        RecordingWaker heavy2 = new RecordingWaker();
        RecordingWaker light2 = new RecordingWaker();
        Acquisition head2 = s.acquireThen(3, heavy2);
        Acquisition next2 = s.acquireThen(1, light2);
        s.release(1);
        assertTrue(head2.cancel(REFUSING));
        assertTrue(next2.isGranted());
        assertEquals(1, light2.wakes.get());
        assertSame(Thread.currentThread(), light2.wokenOn);
        assertNull(head2.failure());
        assertEquals(0, s.availablePermits());
    }

    /** Starts a thread that takes one permit with {@code acquireBlocking}, then counts {@code done} down. */
    private static Thread blockedAcquirer(Semaphore s, CountDownLatch done, String name) {
        Thread t = new Thread(
                () -> {
                    try {
                        s.acquireBlocking(1);
                        done.countDown();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                },
                name);
        t.start();
        return t;
    }

    private static void awaitQueueLength(Semaphore s, int n) {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (s.queueLength() != n) {
            assertTrue(System.nanoTime() < deadline, "hang guard");
            Thread.onSpinWait();
        }
    }

    private static void join(Thread t) {
        try {
            t.join(20_000);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
        assertFalse(t.isAlive(), "hang guard");
    }
}
