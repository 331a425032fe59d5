// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static dev.handoff.MutexTest.joinOrFail;
import static dev.handoff.MutexTest.runFourThreads;
import static dev.handoff.MutexTest.start;
import static dev.handoff.MutexTest.waitUntil;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * {@link RwLock}: sharing, exclusion, writer priority over later readers, partial service of a
 * queued writer and its cancellation, downgrade, the reader limit, misuse, and every face of both
 * the read and the write lock. Timeouts are hang guards only; nothing asserts on speed.
 */
class RwLockTest {

    private static final long SECONDS = MutexTest.HANG_GUARD_SECONDS;

    private static void await(CompletableFuture<?> f) throws Exception {
        f.get(SECONDS, TimeUnit.SECONDS);
    }

    /** Asserts that nobody holds or waits for the lock, and that every permit is back. */
    private static void assertIdle(RwLock lock) {
        assertFalse(lock.isWriteLocked(), lock::toString);
        assertEquals(0, lock.readLockCount(), lock::toString);
        assertEquals(0, lock.queueLength(), lock::toString);
        assertTrue(lock.tryWriteLock(), "all permits should be free: " + lock);
        lock.writeUnlock();
        int readers = Math.min(lock.maxReaders(), 16);
        for (int i = 0; i < readers; i++) {
            assertTrue(lock.tryReadLock(), "reader " + i + " of " + lock);
        }
        if (readers == lock.maxReaders()) {
            assertFalse(lock.tryReadLock(), "a permit was created: " + lock);
        }
        for (int i = 0; i < readers; i++) {
            lock.readUnlock();
        }
        assertEquals(0, lock.readLockCount());
    }

    // ------------------------------------------------------------------ construction

    @Test
    void constructorRejectsFewerThanOneReaderNamingTheCallAndTheValue() {
        for (int bad : new int[] {0, -1, Integer.MIN_VALUE}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new RwLock(bad));
            assertTrue(e.getMessage().contains("new RwLock(" + bad + ")"), e.getMessage());
            assertTrue(e.getMessage().contains("at least 1"), e.getMessage());
        }
    }

    @Test
    void defaultAndSmallestLocksAreUsable() {
        RwLock dflt = new RwLock();
        assertEquals(RwLock.DEFAULT_MAX_READERS, dflt.maxReaders());
        assertIdle(dflt);

        RwLock one = new RwLock(1); // a reader excludes a writer and every other reader
        assertEquals(1, one.maxReaders());
        assertTrue(one.tryReadLock());
        assertFalse(one.tryReadLock());
        assertFalse(one.tryWriteLock());
        one.readUnlock();
        assertTrue(one.tryWriteLock());
        assertFalse(one.tryReadLock());
        one.writeUnlock();
        assertIdle(one);

        RwLock max = new RwLock(Integer.MAX_VALUE);
        assertTrue(max.tryWriteLock());
        max.writeUnlock();
        assertIdle(max);
    }

    @Test
    void toStringShowsTheState() {
        RwLock lock = new RwLock(8);
        assertTrue(lock.toString().contains("maxReaders=8"), lock.toString());
        assertTrue(lock.tryReadLock());
        assertTrue(lock.toString().contains("readers=1"), lock.toString());
        lock.readUnlock();
        assertTrue(lock.tryWriteLock());
        assertTrue(lock.toString().contains("write-locked"), lock.toString());
        lock.writeUnlock();
    }

    // ------------------------------------------------------------------ sharing and exclusion

    @Test
    void readersShareThroughEveryFace() throws Exception {
        RwLock lock = new RwLock(8);
        assertTrue(lock.tryReadLock());
        assertTrue(lock.tryReadLockBlocking(Duration.ZERO));
        assertTrue(lock.tryReadLockBlocking(Duration.ofSeconds(1)));
        lock.readLockBlocking();
        CompletableFuture<Permits> async = lock.readLockAsync();
        assertTrue(async.isDone(), "a free read permit is granted at once");
        RecordingWaker w = new RecordingWaker();
        Acquisition a = lock.readLockThen(w);
        assertTrue(a.isGranted());
        assertEquals(1, a.permits());
        assertEquals(1, w.wakes.get());
        assertSame(Thread.currentThread(), w.wokenOn);

        assertEquals(6, lock.readLockCount());
        assertFalse(lock.isWriteLocked());
        assertEquals(0, lock.queueLength());
        assertFalse(lock.tryWriteLock(), "readers exclude a writer");
        assertFalse(lock.tryWriteLockBlocking(Duration.ZERO));
        for (int i = 0; i < 6; i++) {
            lock.readUnlock();
        }
        assertIdle(lock);
    }

    @Test
    void readersOnDifferentThreadsHoldTheLockAtTheSameTime() throws Exception {
        RwLock lock = new RwLock(4);
        CountDownLatch allInside = new CountDownLatch(4);
        CountDownLatch leave = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> readers = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            readers.add(start("reader-" + i, failure, () -> {
                lock.readLockBlocking();
                try {
                    allInside.countDown();
                    assertTrue(leave.await(SECONDS, TimeUnit.SECONDS));
                } finally {
                    lock.readUnlock();
                }
            }));
        }
        assertTrue(allInside.await(SECONDS, TimeUnit.SECONDS), "the readers did not get in together: " + lock);
        assertEquals(4, lock.readLockCount());
        leave.countDown();
        for (Thread t : readers) {
            joinOrFail(t);
        }
        assertNull(failure.get());
        assertIdle(lock);
    }

    @Test
    void writerExcludesReadersAndWritersAndWaitersAreServedInOrder() throws Exception {
        RwLock lock = new RwLock(4);
        assertTrue(lock.tryWriteLock());
        assertTrue(lock.isWriteLocked());
        assertEquals(0, lock.readLockCount());
        assertFalse(lock.tryReadLock());
        assertFalse(lock.tryWriteLock());
        assertFalse(lock.tryReadLockBlocking(Duration.ZERO));
        assertFalse(lock.tryReadLockBlocking(Duration.ofMillis(20)));
        assertFalse(lock.tryWriteLockBlocking(Duration.ofMillis(20)));
        assertEquals(0, lock.queueLength(), "timed-out waits leave the queue");

        CompletableFuture<Permits> r1 = lock.readLockAsync();
        CompletableFuture<Permits> r2 = lock.readLockAsync();
        CompletableFuture<RwLock.WritePermits> w2 = lock.writeLockAsync();
        CompletableFuture<Permits> r3 = lock.readLockAsync();
        assertFalse(r1.isDone());
        assertFalse(w2.isDone());
        assertEquals(4, lock.queueLength());

        lock.writeUnlock(); // the readers at the head get in, up to the next writer
        await(r1);
        await(r2);
        assertFalse(lock.isWriteLocked());
        assertEquals(2, lock.readLockCount());
        assertFalse(w2.isDone(), "the writer waits for the readers ahead of it");
        assertFalse(r3.isDone(), "a reader behind a waiting writer waits too");

        lock.readUnlock();
        assertFalse(w2.isDone());
        lock.readUnlock();
        await(w2);
        assertTrue(lock.isWriteLocked());
        assertFalse(r3.isDone());

        lock.writeUnlock();
        await(r3);
        assertEquals(1, lock.readLockCount());
        lock.readUnlock();
        assertIdle(lock);
    }

    @Test
    void writersExcludeEachOtherInFifoOrder() throws Exception {
        RwLock lock = new RwLock(3);
        assertTrue(lock.tryWriteLock());
        CompletableFuture<RwLock.WritePermits> w2 = lock.writeLockAsync();
        CompletableFuture<RwLock.WritePermits> w3 = lock.writeLockAsync();
        lock.writeUnlock();
        await(w2);
        assertFalse(w3.isDone());
        assertTrue(lock.isWriteLocked());
        lock.writeUnlock();
        await(w3);
        lock.writeUnlock();
        assertIdle(lock);
    }

    // ------------------------------------------------------------------ writer priority

    @Test
    void queuedWriterMakesANewReaderWaitThoughReadPermitsAreFree() throws Exception {
        for (RwLock lock : new RwLock[] {new RwLock(4), new RwLock()}) {
            assertTrue(lock.tryReadLock());
            CompletableFuture<RwLock.WritePermits> writer = lock.writeLockAsync();
            assertFalse(writer.isDone());
            assertEquals(1, lock.readLockCount(), "only one of " + lock.maxReaders() + " read permits is in use");

            assertFalse(lock.tryReadLock(), "no reader may barge past the waiting writer: " + lock);
            assertFalse(lock.tryReadLockBlocking(Duration.ZERO));
            assertFalse(lock.tryReadLockBlocking(Duration.ofMillis(20)));
            CompletableFuture<Permits> asyncReader = lock.readLockAsync();
            RecordingWaker callbackReader = new RecordingWaker();
            Acquisition callbackAcquisition = lock.readLockThen(callbackReader);
            assertFalse(asyncReader.isDone(), "a new reader waits behind the writer: " + lock);
            assertFalse(callbackAcquisition.isGranted());
            assertEquals(0, callbackReader.wakes.get());
            assertEquals(3, lock.queueLength());

            lock.readUnlock(); // the only reader leaves: the writer goes first
            await(writer);
            assertTrue(lock.isWriteLocked());
            assertFalse(asyncReader.isDone());
            assertFalse(callbackAcquisition.isGranted());

            lock.writeUnlock();
            await(asyncReader);
            assertTrue(callbackAcquisition.isGranted());
            assertEquals(1, callbackReader.wakes.get());
            assertEquals(2, lock.readLockCount());
            lock.readUnlock();
            lock.readUnlock();
            assertIdle(lock);
        }
    }

    @Test
    void aStreamOfReadersCannotStarveAWriter() throws Exception {
        RwLock lock = new RwLock(2);
        assertTrue(lock.tryReadLock());
        CompletableFuture<RwLock.WritePermits> writer = lock.writeLockAsync();
        // Readers keep arriving and leaving; each arrives behind the writer and so waits for it.
        List<CompletableFuture<Permits>> later = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            later.add(lock.readLockAsync());
        }
        lock.readUnlock();
        await(writer);
        for (CompletableFuture<Permits> r : later) {
            assertFalse(r.isDone());
        }
        lock.writeUnlock();
        await(later.get(0));
        await(later.get(1));
        assertFalse(later.get(2).isDone(), "the reader limit of 2 holds");
        lock.readUnlock();
        await(later.get(2));
        lock.readUnlock();
        lock.readUnlock();
        await(later.get(3));
        await(later.get(4));
        lock.readUnlock();
        lock.readUnlock();
        assertIdle(lock);
    }

    // ------------------------------------------------------------------ cancelling a partly served writer

    /** How a test withdraws the queued writer. */
    private interface WriterUnderTest {
        /** Queues a writer for all {@code lock.maxReaders()} permits; returns once it is queued. */
        void queue(RwLock lock) throws Exception;

        /** Withdraws it; returns once it has left the queue. */
        void withdraw(RwLock lock) throws Exception;
    }

    /**
     * maxReaders = 3. R1 and R2 hold; the writer queues and is handed the one free permit; R1
     * leaves and its permit goes to the writer too (2 of 3). Readers R3 and R4 wait behind the
     * writer. Withdrawing the writer must hand its 2 permits on: R3 and R4 get in at once.
     */
    private static void cancellingPartlyServedWriterWakesTheReadersBehindIt(WriterUnderTest writer) throws Exception {
        RwLock lock = new RwLock(3);
        assertTrue(lock.tryReadLock()); // R1
        assertTrue(lock.tryReadLock()); // R2
        writer.queue(lock);
        assertEquals(1, lock.queueLength());
        assertEquals(2, lock.readLockCount());
        CompletableFuture<Permits> r3 = lock.readLockAsync();
        RecordingWaker r4 = new RecordingWaker();
        Acquisition r4Acquisition = lock.readLockThen(r4);
        lock.readUnlock(); // R1 leaves: its permit goes to the writer, not to R3
        assertEquals(1, lock.readLockCount(), "R2 alone holds; the writer has been handed 2: " + lock);
        assertFalse(r3.isDone(), "R3 is behind the partly served writer");
        assertFalse(r4Acquisition.isGranted());
        assertFalse(lock.tryReadLock());
        assertEquals(3, lock.queueLength());

        writer.withdraw(lock);

        await(r3);
        assertTrue(r4Acquisition.isGranted(), "the withdrawn writer's permits must reach R4: " + lock);
        assertEquals(1, r4.wakes.get());
        assertFalse(lock.isWriteLocked());
        assertEquals(3, lock.readLockCount(), "R2, R3 and R4");
        assertEquals(0, lock.queueLength());
        assertFalse(lock.tryReadLock(), "the reader limit is reached, no permit was created");
        lock.readUnlock();
        lock.readUnlock();
        lock.readUnlock();
        assertIdle(lock);
    }

    @Test
    void cancellingAPartlyServedAsyncWriterWakesTheReadersBehindIt() throws Exception {
        AtomicReference<CompletableFuture<RwLock.WritePermits>> f = new AtomicReference<>();
        cancellingPartlyServedWriterWakesTheReadersBehindIt(new WriterUnderTest() {
            @Override
            public void queue(RwLock lock) {
                f.set(lock.writeLockAsync());
                assertFalse(f.get().isDone());
            }

            @Override
            public void withdraw(RwLock lock) {
                assertTrue(f.get().cancel(true));
                assertTrue(f.get().isCancelled());
            }
        });
    }

    @Test
    void failingAPartlyServedAsyncWriterByHandWakesTheReadersBehindIt() throws Exception {
        AtomicReference<CompletableFuture<RwLock.WritePermits>> f = new AtomicReference<>();
        cancellingPartlyServedWriterWakesTheReadersBehindIt(new WriterUnderTest() {
            @Override
            public void queue(RwLock lock) {
                f.set(lock.writeLockAsync());
            }

            @Override
            public void withdraw(RwLock lock) {
                assertTrue(f.get().completeExceptionally(new RuntimeException("gave up")));
            }
        });
    }

    @Test
    void cancellingAPartlyServedCallbackWriterWakesTheReadersBehindIt() throws Exception {
        AtomicReference<Acquisition> a = new AtomicReference<>();
        RecordingWaker w = new RecordingWaker();
        cancellingPartlyServedWriterWakesTheReadersBehindIt(new WriterUnderTest() {
            @Override
            public void queue(RwLock lock) {
                a.set(lock.writeLockThen(w));
                assertFalse(a.get().isGranted());
            }

            @Override
            public void withdraw(RwLock lock) {
                assertTrue(a.get().cancel());
            }
        });
        assertEquals(0, w.claims.get());
        assertEquals(0, w.wakes.get());
    }

    @Test
    void interruptingAPartlyServedBlockingWriterWakesTheReadersBehindIt() throws Exception {
        AtomicReference<Thread> thread = new AtomicReference<>();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        cancellingPartlyServedWriterWakesTheReadersBehindIt(new WriterUnderTest() {
            @Override
            public void queue(RwLock lock) {
                Thread t = new Thread(
                        () -> {
                            try {
                                lock.writeLockBlocking();
                            } catch (Throwable e) {
                                thrown.set(e);
                            }
                        },
                        "blocking-writer");
                thread.set(t);
                t.start();
                waitUntil(() -> lock.queueLength() == 1, "writer queued");
            }

            @Override
            public void withdraw(RwLock lock) throws Exception {
                thread.get().interrupt();
                joinOrFail(thread.get());
                assertTrue(thrown.get() instanceof InterruptedException, String.valueOf(thrown.get()));
                assertTrue(
                        thrown.get().getMessage().contains("writeLockBlocking()"),
                        thrown.get().getMessage());
            }
        });
    }

    @Test
    void interruptingAPartlyServedTimedWriterWakesTheReadersBehindIt() throws Exception {
        AtomicReference<Thread> thread = new AtomicReference<>();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        cancellingPartlyServedWriterWakesTheReadersBehindIt(new WriterUnderTest() {
            @Override
            public void queue(RwLock lock) {
                Thread t = new Thread(
                        () -> {
                            try {
                                lock.tryWriteLockBlocking(Duration.ofSeconds(SECONDS * 3));
                            } catch (Throwable e) {
                                thrown.set(e);
                            }
                        },
                        "timed-writer");
                thread.set(t);
                t.start();
                waitUntil(() -> lock.queueLength() == 1, "writer queued");
            }

            @Override
            public void withdraw(RwLock lock) throws Exception {
                thread.get().interrupt();
                joinOrFail(thread.get());
                assertTrue(thrown.get() instanceof InterruptedException, String.valueOf(thrown.get()));
                assertTrue(
                        thrown.get().getMessage().contains("tryWriteLockBlocking("),
                        thrown.get().getMessage());
            }
        });
    }

    @Test
    void timedOutPartlyServedWriterHandsItsPermitsToTheReadersBehindIt() throws Exception {
        // The timeout's moment is not controlled, so only the end state is asserted: whenever the
        // writer gave up, the readers queued behind it must have got in, and no permit is lost.
        RwLock lock = new RwLock(3);
        assertTrue(lock.tryReadLock());
        assertTrue(lock.tryReadLock());
        AtomicReference<Boolean> got = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread writer =
                start("timed-writer", failure, () -> got.set(lock.tryWriteLockBlocking(Duration.ofMillis(200))));
        waitUntil(() -> lock.queueLength() == 1 || !writer.isAlive(), "writer queued or done");
        CompletableFuture<Permits> r3 = lock.readLockAsync();
        CompletableFuture<Permits> r4 = lock.readLockAsync();
        lock.readUnlock();
        joinOrFail(writer);
        assertNull(failure.get());
        assertEquals(Boolean.FALSE, got.get(), "R2 still holds, so the writer cannot have got in");
        await(r3);
        await(r4);
        assertEquals(3, lock.readLockCount());
        assertEquals(0, lock.queueLength());
        lock.readUnlock();
        lock.readUnlock();
        lock.readUnlock();
        assertIdle(lock);
    }

    @Test
    void writerWhoseWakerDeclinesAtTheGrantIsNotWriteLockedAndPassesItsPermitsOn() throws Exception {
        RwLock lock = new RwLock(3);
        assertTrue(lock.tryReadLock());
        assertTrue(lock.tryReadLock());
        RecordingWaker gone = new RecordingWaker();
        gone.declineClaim = true;
        Acquisition w = lock.writeLockThen(gone);
        CompletableFuture<Permits> r3 = lock.readLockAsync();
        lock.readUnlock();
        lock.readUnlock(); // the writer would be granted here, but its waker declines
        assertEquals(1, gone.claims.get());
        assertEquals(0, gone.wakes.get());
        assertFalse(w.isGranted());
        assertFalse(lock.isWriteLocked(), "a declined grant must not mark the lock write-locked");
        await(r3);
        assertEquals(1, lock.readLockCount());
        lock.readUnlock();
        assertIdle(lock);
    }

    // ------------------------------------------------------------------ downgrade

    @Test
    void downgradeWakesTheWaitingReadersAtTheHeadButNotTheWriterBehindThem() throws Exception {
        RwLock lock = new RwLock(4);
        assertTrue(lock.tryWriteLock());
        CompletableFuture<Permits> r1 = lock.readLockAsync();
        RecordingWaker r2 = new RecordingWaker();
        Acquisition r2Acquisition = lock.readLockThen(r2);
        CompletableFuture<RwLock.WritePermits> w2 = lock.writeLockAsync();
        CompletableFuture<Permits> r3 = lock.readLockAsync();

        lock.downgrade();

        assertFalse(lock.isWriteLocked());
        await(r1);
        assertTrue(r2Acquisition.isGranted());
        assertEquals(1, r2.wakes.get());
        assertEquals(3, lock.readLockCount(), "the downgraded holder, R1 and R2");
        assertFalse(w2.isDone(), "a writer is not let in by a downgrade");
        assertFalse(r3.isDone(), "R3 stays behind the waiting writer");
        assertFalse(lock.tryWriteLock());
        assertFalse(lock.tryReadLock());

        lock.readUnlock(); // the downgraded holder
        lock.readUnlock(); // R1
        assertFalse(w2.isDone());
        lock.readUnlock(); // R2
        await(w2);
        assertTrue(lock.isWriteLocked());
        assertFalse(r3.isDone());
        lock.writeUnlock();
        await(r3);
        lock.readUnlock();
        assertIdle(lock);
    }

    @Test
    void downgradeWithAWriterAtTheHeadKeepsEveryoneElseWaitingUntilTheReadLockIsReleased() throws Exception {
        RwLock lock = new RwLock(4);
        assertTrue(lock.tryWriteLock());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean writerIn = new AtomicBoolean();
        Thread w2 = start("writer-2", failure, () -> {
            lock.writeLockBlocking();
            writerIn.set(true);
            lock.writeUnlock();
        });
        waitUntil(() -> lock.queueLength() == 1, "writer-2 queued");
        CompletableFuture<Permits> r1 = lock.readLockAsync();

        lock.downgrade();

        assertFalse(lock.isWriteLocked());
        assertEquals(1, lock.readLockCount(), "the downgraded holder");
        assertFalse(r1.isDone(), "FIFO: the reader is behind the waiting writer");
        assertFalse(writerIn.get(), "no writer between the write lock and the downgraded read lock");
        assertEquals(2, lock.queueLength());

        lock.readUnlock();
        joinOrFail(w2);
        assertNull(failure.get());
        assertTrue(writerIn.get());
        await(r1);
        lock.readUnlock();
        assertIdle(lock);
    }

    @Test
    void downgradeOfASingleReaderLockKeepsTheOnlyPermit() throws Exception {
        RwLock lock = new RwLock(1);
        lock.writeLockBlocking();
        CompletableFuture<RwLock.WritePermits> w2 = lock.writeLockAsync();
        CompletableFuture<Permits> r1 = lock.readLockAsync();
        lock.downgrade();
        assertFalse(lock.isWriteLocked());
        assertEquals(1, lock.readLockCount());
        assertFalse(w2.isDone());
        assertFalse(r1.isDone());
        assertFalse(lock.tryReadLock());
        lock.readUnlock();
        await(w2);
        assertFalse(r1.isDone());
        lock.writeUnlock();
        await(r1);
        lock.readUnlock();
        assertIdle(lock);
    }

    @Test
    void downgradedHolderAlwaysSeesItsOwnWriteWhileOtherWritersCompete() throws Exception {
        RwLock lock = new RwLock(3);
        AtomicInteger shared = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> competitors = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            competitors.add(start("competing-writer-" + i, failure, () -> {
                while (!stop.get()) {
                    lock.writeLockBlocking();
                    try {
                        shared.set(-1);
                    } finally {
                        lock.writeUnlock();
                    }
                }
            }));
        }
        try {
            for (int round = 1; round <= 1_000; round++) {
                lock.writeLockBlocking();
                shared.set(round);
                lock.downgrade();
                try {
                    assertFalse(lock.isWriteLocked());
                    Thread.yield();
                    assertEquals(
                            round, shared.get(), "a writer got in between the write lock and the downgraded read lock");
                } finally {
                    lock.readUnlock();
                }
            }
        } finally {
            stop.set(true);
            for (Thread t : competitors) {
                joinOrFail(t);
            }
        }
        assertNull(failure.get());
        assertIdle(lock);
    }

    // ------------------------------------------------------------------ reader limit

    @Test
    void readerLimitMakesTheNextReaderWaitUntilOneLeaves() throws Exception {
        RwLock lock = new RwLock(3);
        assertTrue(lock.tryReadLock());
        lock.readLockBlocking();
        await(lock.readLockAsync());
        assertEquals(3, lock.readLockCount());
        assertFalse(lock.tryReadLock(), "the limit of 3 readers is reached");
        assertFalse(lock.tryReadLockBlocking(Duration.ofMillis(20)));

        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch fourthIn = new CountDownLatch(1);
        Thread fourth = start("fourth-reader", failure, () -> {
            lock.readLockBlocking();
            fourthIn.countDown();
        });
        waitUntil(() -> lock.queueLength() == 1, "fourth reader queued");
        CompletableFuture<Permits> fifth = lock.readLockAsync();
        assertEquals(1, fourthIn.getCount());
        assertFalse(fifth.isDone());

        lock.readUnlock();
        assertTrue(fourthIn.await(SECONDS, TimeUnit.SECONDS), "one left, so the fourth gets in: " + lock);
        joinOrFail(fourth);
        assertNull(failure.get());
        assertFalse(fifth.isDone(), "still 3 readers");
        assertEquals(3, lock.readLockCount());

        lock.readUnlock();
        await(fifth);
        assertEquals(3, lock.readLockCount());
        lock.readUnlock();
        lock.readUnlock();
        lock.readUnlock();
        assertIdle(lock);
    }

    // ------------------------------------------------------------------ misuse

    @Test
    void readUnlockWhileWriteLockedThrowsAndChangesNothing() throws Exception {
        RwLock lock = new RwLock(3);
        assertTrue(lock.tryWriteLock());
        CompletableFuture<Permits> reader = lock.readLockAsync();
        IllegalStateException e = assertThrows(IllegalStateException.class, lock::readUnlock);
        assertTrue(e.getMessage().contains("readUnlock()"), e.getMessage());
        assertTrue(lock.isWriteLocked());
        assertEquals(0, lock.readLockCount());
        assertEquals(1, lock.queueLength());
        assertFalse(reader.isDone(), "a failed readUnlock must not hand out a permit");
        assertFalse(lock.tryReadLock());
        lock.writeUnlock();
        await(reader);
        lock.readUnlock();
        assertIdle(lock);
    }

    @Test
    void readUnlockWithoutReadersThrowsAndChangesNothing() {
        RwLock lock = new RwLock(2);
        IllegalStateException e = assertThrows(IllegalStateException.class, lock::readUnlock);
        assertTrue(e.getMessage().contains("readUnlock()"), e.getMessage());
        assertIdle(lock);

        assertTrue(lock.tryReadLock());
        lock.readUnlock();
        assertThrows(IllegalStateException.class, lock::readUnlock, "one lock, two unlocks");
        assertIdle(lock); // in particular no third read permit was created
    }

    @Test
    void readUnlockAfterTheReadersLeftWhileAWriterWaitsThrowsAndChangesNothing() throws Exception {
        RwLock lock = new RwLock(3);
        assertTrue(lock.tryReadLock());
        CompletableFuture<RwLock.WritePermits> writer = lock.writeLockAsync(); // handed 2 of 3, needs the reader's
        lock.readUnlock();
        await(writer);
        assertThrows(IllegalStateException.class, lock::readUnlock);
        assertTrue(lock.isWriteLocked());
        lock.writeUnlock();
        assertIdle(lock);
    }

    @Test
    void writeUnlockWhileNotWriteLockedThrowsAndChangesNothing() throws Exception {
        RwLock lock = new RwLock(3);
        IllegalStateException e = assertThrows(IllegalStateException.class, lock::writeUnlock);
        assertTrue(e.getMessage().contains("writeUnlock()"), e.getMessage());
        assertIdle(lock);

        // Readers hold, a writer is queued and partly served: a stray writeUnlock changes nothing.
        assertTrue(lock.tryReadLock());
        assertTrue(lock.tryReadLock());
        CompletableFuture<RwLock.WritePermits> writer = lock.writeLockAsync();
        CompletableFuture<Permits> reader = lock.readLockAsync();
        assertThrows(IllegalStateException.class, lock::writeUnlock);
        assertFalse(lock.isWriteLocked());
        assertEquals(2, lock.readLockCount());
        assertEquals(2, lock.queueLength());
        assertFalse(writer.isDone(), "a failed writeUnlock must not hand out permits");
        assertFalse(reader.isDone());
        lock.readUnlock();
        assertFalse(writer.isDone());
        lock.readUnlock();
        await(writer);
        lock.writeUnlock();
        await(reader);
        lock.readUnlock();
        assertIdle(lock);
    }

    @Test
    void downgradeWhileNotWriteLockedThrowsAndChangesNothing() throws Exception {
        RwLock lock = new RwLock(3);
        IllegalStateException e = assertThrows(IllegalStateException.class, lock::downgrade);
        assertTrue(e.getMessage().contains("downgrade()"), e.getMessage());
        assertIdle(lock);

        assertTrue(lock.tryReadLock());
        CompletableFuture<RwLock.WritePermits> writer = lock.writeLockAsync();
        assertThrows(IllegalStateException.class, lock::downgrade);
        assertEquals(1, lock.readLockCount());
        assertFalse(writer.isDone());
        lock.readUnlock();
        await(writer);
        lock.writeUnlock();
        assertIdle(lock);
    }

    @Test
    void writeUnlockOrDowngradeAfterADowngradeThrowsAndKeepsTheReadLock() {
        RwLock lock = new RwLock(3);
        assertTrue(lock.tryWriteLock());
        lock.downgrade();
        assertThrows(IllegalStateException.class, lock::writeUnlock);
        assertThrows(IllegalStateException.class, lock::downgrade);
        assertEquals(1, lock.readLockCount());
        assertFalse(lock.tryWriteLock());
        assertTrue(lock.tryReadLock(), "the downgraded lock is a read lock: readers may join");
        lock.readUnlock();
        lock.readUnlock();
        assertIdle(lock);
    }

    @Test
    void writeUnlockTwiceThrowsTheSecondTime() {
        RwLock lock = new RwLock(3);
        assertTrue(lock.tryWriteLock());
        lock.writeUnlock();
        IllegalStateException e = assertThrows(IllegalStateException.class, lock::writeUnlock);
        assertTrue(e.getMessage().contains("writeUnlock()"), e.getMessage());
        assertIdle(lock);
    }

    @Test
    void ofTwoRacingWriteUnlocksExactlyOneSucceeds() throws Exception {
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            for (int round = 0; round < 1_000; round++) {
                RwLock lock = new RwLock(3);
                CompletableFuture<Permits> reader = lock.readLockAsync();
                await(reader);
                CompletableFuture<RwLock.WritePermits> writer = lock.writeLockAsync();
                lock.readUnlock();
                await(writer);
                CompletableFuture<Permits> behind = lock.readLockAsync();
                CyclicBarrier go = new CyclicBarrier(2);
                Future<Boolean> theirs = other.submit(() -> {
                    go.await();
                    return unlockedWithoutError(lock::writeUnlock);
                });
                go.await(SECONDS, TimeUnit.SECONDS);
                boolean mine = unlockedWithoutError(lock::writeUnlock);
                boolean theirsSucceeded = theirs.get(SECONDS, TimeUnit.SECONDS);
                assertTrue(mine ^ theirsSucceeded, "round " + round + ": mine=" + mine + ", theirs=" + theirsSucceeded);
                await(behind);
                assertEquals(1, lock.readLockCount(), "round " + round + ": " + lock);
                lock.readUnlock();
                assertIdle(lock);
            }
        } finally {
            other.shutdownNow();
        }
    }

    private static boolean unlockedWithoutError(Runnable unlock) {
        try {
            unlock.run();
            return true;
        } catch (IllegalStateException expected) {
            return false;
        }
    }

    @Test
    void nullArgumentsThrowNamingTheCall() {
        RwLock lock = new RwLock(3);
        NullPointerException e1 = assertThrows(NullPointerException.class, () -> lock.readLockThen(null));
        assertTrue(e1.getMessage().contains("readLockThen(null)"), e1.getMessage());
        NullPointerException e2 = assertThrows(NullPointerException.class, () -> lock.writeLockThen(null));
        assertTrue(e2.getMessage().contains("writeLockThen(null)"), e2.getMessage());
        NullPointerException e3 = assertThrows(NullPointerException.class, () -> lock.tryReadLockBlocking(null));
        assertTrue(e3.getMessage().contains("tryReadLockBlocking(null)"), e3.getMessage());
        NullPointerException e4 = assertThrows(NullPointerException.class, () -> lock.tryWriteLockBlocking(null));
        assertTrue(e4.getMessage().contains("tryWriteLockBlocking(null)"), e4.getMessage());
        assertIdle(lock);
    }

    // ------------------------------------------------------------------ faces

    @Test
    void callbackWriterIsWriteLockedBeforeItsWakerRunsAndIsWokenByTheLastReader() throws Exception {
        RwLock lock = new RwLock(2);
        assertTrue(lock.tryReadLock());
        assertTrue(lock.tryReadLock());
        AtomicBoolean writeLockedInWaker = new AtomicBoolean();
        AtomicReference<Thread> wokenOn = new AtomicReference<>();
        Acquisition w = lock.writeLockThen(() -> {
            writeLockedInWaker.set(lock.isWriteLocked());
            wokenOn.set(Thread.currentThread());
        });
        assertEquals(2, w.permits(), "a write takes all maxReaders permits");
        assertFalse(w.isGranted());
        lock.readUnlock();
        assertFalse(w.isGranted());

        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread lastReader = start("last-reader", failure, lock::readUnlock);
        joinOrFail(lastReader);
        assertNull(failure.get());
        assertTrue(w.isGranted());
        assertTrue(writeLockedInWaker.get(), "write-locked from the grant on, before the waker runs");
        assertSame(lastReader, wokenOn.get(), "woken on the thread whose unlock granted it");
        assertFalse(w.cancel());
        lock.writeUnlock();
        assertIdle(lock);
    }

    @Test
    void callbackWriterOnAFreeLockIsGrantedAtOnce() {
        RwLock lock = new RwLock(5);
        RecordingWaker w = new RecordingWaker();
        Acquisition a = lock.writeLockThen(w);
        assertTrue(a.isGranted());
        assertEquals(1, w.wakes.get());
        assertSame(Thread.currentThread(), w.wokenOn);
        assertTrue(lock.isWriteLocked());
        lock.writeUnlock();
        assertIdle(lock);
    }

    @Test
    void callbackReaderQueuedBehindAWriterIsWokenByWriteUnlockAndCanBeCancelled() {
        RwLock lock = new RwLock(3);
        assertTrue(lock.tryWriteLock());
        RecordingWaker kept = new RecordingWaker();
        RecordingWaker withdrawn = new RecordingWaker();
        Acquisition a = lock.readLockThen(kept);
        Acquisition b = lock.readLockThen(withdrawn);
        assertTrue(b.cancel());
        lock.writeUnlock();
        assertTrue(a.isGranted());
        assertEquals(1, kept.wakes.get());
        assertEquals(0, withdrawn.claims.get());
        assertEquals(0, withdrawn.wakes.get());
        assertEquals(1, lock.readLockCount());
        lock.readUnlock();
        assertIdle(lock);
    }

    @Test
    void asyncWriterIsWriteLockedWhenItsFutureCompletes() throws Exception {
        RwLock lock = new RwLock(3);
        CompletableFuture<RwLock.WritePermits> free = lock.writeLockAsync();
        assertTrue(free.isDone());
        assertTrue(lock.isWriteLocked());
        lock.writeUnlock();

        assertTrue(lock.tryReadLock());
        CompletableFuture<RwLock.WritePermits> queued = lock.writeLockAsync();
        AtomicBoolean writeLockedAtCompletion = new AtomicBoolean();
        CompletableFuture<Void> observed = queued.thenRun(() -> writeLockedAtCompletion.set(lock.isWriteLocked()));
        lock.readUnlock();
        await(observed);
        assertTrue(writeLockedAtCompletion.get());
        lock.writeUnlock();
        assertIdle(lock);
    }

    @Test
    void blockingReaderWaitsForTheWriterAndBlockingWriterWaitsForTheReaders() throws Exception {
        RwLock lock = new RwLock(3);
        AtomicReference<Throwable> failure = new AtomicReference<>();

        assertTrue(lock.tryWriteLock());
        CountDownLatch readerIn = new CountDownLatch(1);
        Thread reader = start("blocking-reader", failure, () -> {
            lock.readLockBlocking();
            readerIn.countDown();
        });
        waitUntil(() -> lock.queueLength() == 1, "blocking reader queued");
        assertEquals(1, readerIn.getCount());
        lock.writeUnlock();
        assertTrue(readerIn.await(SECONDS, TimeUnit.SECONDS));
        joinOrFail(reader);
        assertEquals(1, lock.readLockCount(), "the reader's lock outlives its thread; any thread may unlock");

        CountDownLatch writerIn = new CountDownLatch(1);
        Thread writer = start("blocking-writer", failure, () -> {
            lock.writeLockBlocking();
            writerIn.countDown();
        });
        waitUntil(() -> lock.queueLength() == 1, "blocking writer queued");
        assertEquals(1, writerIn.getCount());
        lock.readUnlock();
        assertTrue(writerIn.await(SECONDS, TimeUnit.SECONDS));
        joinOrFail(writer);
        assertTrue(lock.isWriteLocked());
        lock.writeUnlock();
        assertNull(failure.get());
        assertIdle(lock);
    }

    @Test
    void timedFacesGetTheLockWhenReleasedInTimeAndGiveUpOtherwise() throws Exception {
        RwLock lock = new RwLock(2);
        assertTrue(lock.tryWriteLockBlocking(Duration.ofSeconds(1)));
        assertTrue(lock.isWriteLocked());
        assertFalse(lock.tryWriteLockBlocking(Duration.ofMillis(20)));
        assertFalse(lock.tryReadLockBlocking(Duration.ofMillis(20)));
        assertFalse(lock.tryWriteLockBlocking(Duration.ofSeconds(-1)));
        assertFalse(lock.tryReadLockBlocking(Duration.ofSeconds(Long.MIN_VALUE)));
        assertEquals(0, lock.queueLength());
        assertTrue(lock.isWriteLocked());

        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean readerGot = new AtomicBoolean();
        Thread reader = start(
                "timed-reader",
                failure,
                () -> readerGot.set(lock.tryReadLockBlocking(Duration.ofSeconds(SECONDS * 3))));
        waitUntil(() -> lock.queueLength() == 1, "timed reader queued");
        lock.writeUnlock();
        joinOrFail(reader);
        assertTrue(readerGot.get());
        assertEquals(1, lock.readLockCount());

        AtomicBoolean writerGot = new AtomicBoolean();
        Thread writer = start(
                "timed-writer",
                failure,
                () -> writerGot.set(lock.tryWriteLockBlocking(Duration.ofSeconds(SECONDS * 3))));
        waitUntil(() -> lock.queueLength() == 1, "timed writer queued");
        lock.readUnlock();
        joinOrFail(writer);
        assertTrue(writerGot.get());
        assertTrue(lock.isWriteLocked(), "the timed face marks the lock write-locked");
        lock.writeUnlock();
        assertNull(failure.get());
        assertIdle(lock);
    }

    @Test
    void interruptedBlockingReaderThrowsNamingTheCallAndHoldsNothing() throws Exception {
        RwLock lock = new RwLock(2);
        assertTrue(lock.tryWriteLock());
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread t = new Thread(
                () -> {
                    try {
                        lock.readLockBlocking();
                    } catch (Throwable e) {
                        thrown.set(e);
                    }
                },
                "interrupted-reader");
        t.start();
        waitUntil(() -> lock.queueLength() == 1, "reader queued");
        t.interrupt();
        joinOrFail(t);
        assertTrue(thrown.get() instanceof InterruptedException, String.valueOf(thrown.get()));
        assertTrue(
                thrown.get().getMessage().contains("readLockBlocking()"),
                thrown.get().getMessage());
        assertEquals(0, lock.queueLength());
        lock.writeUnlock();
        assertIdle(lock);

        Thread.currentThread().interrupt();
        try {
            assertThrows(InterruptedException.class, lock::readLockBlocking);
            Thread.currentThread().interrupt();
            assertThrows(InterruptedException.class, lock::writeLockBlocking);
        } finally {
            Thread.interrupted();
        }
        assertIdle(lock);
    }

    /** A cancel of a waiting writeLockAsync races the readUnlock that would grant it. */
    @Test
    void cancelledWriteLockAsyncNeverHoldsTheLockEvenWhenRacingTheGrant() throws Exception {
        ExecutorService unlocker = Executors.newSingleThreadExecutor();
        try {
            for (int round = 0; round < 2_000; round++) {
                RwLock lock = new RwLock(3);
                assertTrue(lock.tryReadLock());
                CompletableFuture<RwLock.WritePermits> writer = lock.writeLockAsync();
                CompletableFuture<Permits> readerBehind = lock.readLockAsync();
                CyclicBarrier go = new CyclicBarrier(2);
                Future<?> u = unlocker.submit(() -> {
                    go.await();
                    lock.readUnlock();
                    return null;
                });
                go.await(SECONDS, TimeUnit.SECONDS);
                boolean cancelled = writer.cancel(true);
                u.get(SECONDS, TimeUnit.SECONDS);
                if (cancelled) {
                    assertFalse(lock.isWriteLocked(), "round " + round + ": " + lock);
                    await(readerBehind); // the writer's permits went on to the reader
                } else {
                    await(writer);
                    assertTrue(lock.isWriteLocked(), "round " + round + ": granted, not write-locked: " + lock);
                    assertFalse(readerBehind.isDone());
                    lock.writeUnlock();
                    await(readerBehind);
                }
                assertEquals(1, lock.readLockCount(), "round " + round + ": " + lock);
                lock.readUnlock();
                assertIdle(lock);
            }
        } finally {
            unlocker.shutdownNow();
        }
    }

    /**
     * A cancel that lands after the grant chose a future (claimed under the lock) but before the
     * future completed must lose. One writeUnlock grants two readers at once; the first one's waker
     * runs before the second's future is completed, and cancels it from there.
     */
    @Test
    void cancellingAReadFutureBetweenItsGrantAndItsCompletionReturnsFalse() throws Exception {
        RwLock lock = new RwLock(3);
        assertTrue(lock.tryWriteLock());
        AtomicReference<CompletableFuture<Permits>> second = new AtomicReference<>();
        AtomicReference<Boolean> cancelResult = new AtomicReference<>();
        Acquisition first =
                lock.readLockThen(() -> cancelResult.set(second.get().cancel(true)));
        second.set(lock.readLockAsync());
        lock.writeUnlock();
        assertTrue(first.isGranted());
        assertEquals(Boolean.FALSE, cancelResult.get(), "the grant came first: cancel must lose");
        await(second.get());
        assertFalse(second.get().isCancelled());
        assertEquals(2, lock.readLockCount(), lock::toString);
        lock.readUnlock();
        lock.readUnlock();
        assertIdle(lock);
    }

    /**
     * A write future granted by a writer's waker that unlocks, then cancelled from inside that
     * waker: the grant came first, so the cancel must lose, whether the future's completion ran
     * nested (before the cancel) or is deferred (after it); and the lock stays write-locked.
     */
    @Test
    void cancellingAWriteFutureFromTheWakerWhoseUnlockGrantedItReturnsFalse() throws Exception {
        RwLock lock = new RwLock(3);
        assertTrue(lock.tryWriteLock());
        AtomicReference<CompletableFuture<RwLock.WritePermits>> second = new AtomicReference<>();
        AtomicReference<Boolean> cancelResult = new AtomicReference<>();
        Acquisition first = lock.writeLockThen(() -> {
            lock.writeUnlock(); // grants `second`
            cancelResult.set(second.get().cancel(true));
        });
        second.set(lock.writeLockAsync());
        lock.writeUnlock();
        assertTrue(first.isGranted());
        assertEquals(Boolean.FALSE, cancelResult.get(), "the grant came first: cancel must lose");
        await(second.get());
        assertTrue(lock.isWriteLocked(), lock::toString);
        lock.writeUnlock();
        assertIdle(lock);
    }

    /** A cancel of a waiting readLockAsync races the writeUnlock that would grant it. */
    @Test
    void cancelledReadLockAsyncNeverHoldsTheLockEvenWhenRacingTheGrant() throws Exception {
        ExecutorService unlocker = Executors.newSingleThreadExecutor();
        try {
            for (int round = 0; round < 2_000; round++) {
                RwLock lock = new RwLock(2);
                assertTrue(lock.tryWriteLock());
                CompletableFuture<Permits> reader = lock.readLockAsync();
                CyclicBarrier go = new CyclicBarrier(2);
                Future<?> u = unlocker.submit(() -> {
                    go.await();
                    lock.writeUnlock();
                    return null;
                });
                go.await(SECONDS, TimeUnit.SECONDS);
                boolean cancelled = reader.cancel(true);
                u.get(SECONDS, TimeUnit.SECONDS);
                if (cancelled) {
                    assertEquals(0, lock.readLockCount(), "round " + round + ": cancelled but holds: " + lock);
                } else {
                    await(reader);
                    assertEquals(1, lock.readLockCount(), "round " + round + ": " + lock);
                    lock.readUnlock();
                }
                assertIdle(lock);
            }
        } finally {
            unlocker.shutdownNow();
        }
    }

    // ------------------------------------------------------------------ exclusion under contention

    /** Two fields a writer keeps equal; a reader that ever sees them differ saw a torn write. */
    private static final class Pair {
        long a;
        long b;
        int writersInside;
        int maxWritersInside;
    }

    private static void write(Pair p) {
        p.writersInside++;
        p.maxWritersInside = Math.max(p.maxWritersInside, p.writersInside);
        long v = p.a;
        p.a = v + 1;
        Thread.yield();
        p.b = v + 1;
        p.writersInside--;
    }

    @Test
    void fourThreadsTimesAThousandWritesAreExactUnderTheWriteLock() throws Exception {
        RwLock lock = new RwLock(4);
        Pair p = new Pair();
        runFourThreads(i -> {
            lock.writeLockBlocking();
            try {
                write(p);
            } finally {
                lock.writeUnlock();
            }
        });
        assertEquals(4_000, p.a);
        assertEquals(4_000, p.b);
        assertEquals(1, p.maxWritersInside);
        assertIdle(lock);
    }

    @Test
    void fourThreadsTimesAThousandWritesAreExactMixingFacesReadersAndDowngrades() throws Exception {
        RwLock lock = new RwLock(3); // small, so readers hit the limit and writers get partly served
        Pair p = new Pair();
        AtomicInteger reads = new AtomicInteger();
        runFourThreads(i -> {
            // every step writes once; some also read, under a fresh read lock or after a downgrade
            switch (i % 6) {
                case 0:
                    lock.writeLockBlocking();
                    break;
                case 1:
                    await(lock.writeLockAsync());
                    break;
                case 2:
                    assertTrue(lock.tryWriteLockBlocking(Duration.ofSeconds(SECONDS * 3)));
                    break;
                case 3: {
                    CountDownLatch woken = new CountDownLatch(1);
                    Acquisition a = lock.writeLockThen(woken::countDown);
                    assertTrue(woken.await(SECONDS, TimeUnit.SECONDS));
                    assertTrue(a.isGranted());
                    break;
                }
                default:
                    if (!lock.tryWriteLock()) {
                        lock.writeLockBlocking();
                    }
                    break;
            }
            boolean downgraded = false;
            try {
                assertTrue(lock.isWriteLocked());
                write(p);
                if (i % 3 == 0) {
                    long written = p.a;
                    lock.downgrade();
                    downgraded = true;
                    assertEquals(written, p.a, "a writer got in during a downgrade");
                    assertEquals(p.a, p.b);
                    reads.incrementAndGet();
                }
            } finally {
                if (downgraded) {
                    lock.readUnlock();
                } else {
                    lock.writeUnlock();
                }
            }
            if (i % 2 == 0) {
                if (i % 4 == 0) {
                    lock.readLockBlocking();
                } else {
                    await(lock.readLockAsync());
                }
                try {
                    assertFalse(lock.isWriteLocked());
                    assertEquals(p.a, p.b, "torn write seen by a reader");
                    reads.incrementAndGet();
                } finally {
                    lock.readUnlock();
                }
            }
        });
        assertEquals(4_000, p.a);
        assertEquals(4_000, p.b);
        assertEquals(1, p.maxWritersInside);
        assertTrue(reads.get() > 0);
        assertIdle(lock);
    }

    @Test
    void virtualThreadsReadAndWriteExactly() throws Exception {
        assumeTrue(Runtime.version().feature() >= 21, "virtual threads need JDK 21+");
        Method factory = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        ExecutorService executor = (ExecutorService) factory.invoke(null);
        RwLock lock = new RwLock(4);
        Pair p = new Pair();
        List<Future<?>> tasks = new ArrayList<>();
        try {
            for (int i = 0; i < 1_000; i++) {
                tasks.add(executor.submit(() -> {
                    for (int k = 0; k < 4; k++) {
                        lock.writeLockBlocking();
                        try {
                            write(p);
                        } finally {
                            lock.writeUnlock();
                        }
                        lock.readLockBlocking();
                        try {
                            assertEquals(p.a, p.b);
                        } finally {
                            lock.readUnlock();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : tasks) {
                try {
                    f.get(SECONDS * 3, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    throw new AssertionError(e.getCause());
                }
            }
        } finally {
            executor.shutdownNow();
        }
        assertEquals(4_000, p.a);
        assertEquals(1, p.maxWritersInside);
        assertIdle(lock);
    }
}
