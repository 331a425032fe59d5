// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * CONTRACT.md section 5, rule by rule: resize with debt, load shedding by weight and by length,
 * up-to requests, timed async acquisition and graceful close; bad input on each; races in loops.
 */
@Timeout(120) // a guard against hangs, not a speed check
class CapacityControlTest {

    private static final long WAIT_MS = TimeUnit.SECONDS.toMillis(20);

    // ------------------------------------------------------------------ setCapacity

    @Test
    void growingHandsTheNewPermitsToTheQueueLikeARelease() {
        Semaphore s = new Semaphore(4);
        assertTrue(s.tryAcquire(4));
        RecordingWaker heavy = new RecordingWaker();
        RecordingWaker light = new RecordingWaker();
        Acquisition a = s.acquireThen(3, heavy);
        Acquisition b = s.acquireThen(1, light);
        s.setCapacity(6); // 2 new permits: partial to the head (needs 3)
        assertFalse(a.isGranted());
        assertEquals(0, s.availablePermits());
        assertEquals(6, s.capacity());
        s.setCapacity(8); // 2 more: the head gets its 3rd, the next 1, nothing floats
        assertTrue(a.isGranted());
        assertTrue(b.isGranted());
        assertEquals(0, s.availablePermits());
        s.release(4);
        s.release(3);
        s.release(1);
        assertEquals(8, s.availablePermits());
    }

    @Test
    void shrinkingBelowWhatIsHeldRecordsDebtThatReleasesPayFirst() {
        Semaphore s = new Semaphore(10);
        assertTrue(s.tryAcquire(8)); // 2 free
        s.setCapacity(4); // takes the 2 free, owes 4
        assertEquals(4, s.capacity());
        assertEquals(0, s.availablePermits());
        assertFalse(s.tryAcquire(1));
        RecordingWaker w = new RecordingWaker();
        Acquisition a = s.acquireThen(1, w);
        s.release(3); // pays 3 of the debt; nothing reaches the waiter
        assertFalse(a.isGranted());
        assertEquals(0, s.availablePermits());
        s.release(2); // pays the last 1, then the waiter gets 1
        assertTrue(a.isGranted());
        assertEquals(0, s.availablePermits());
        s.release(3); // 3 of the 8 still held, plus the waiter's 1 outstanding
        assertEquals(3, s.availablePermits());
        IllegalStateException over = assertThrows(IllegalStateException.class, () -> s.release(2));
        assertTrue(over.getMessage().contains("release(2)"), over.getMessage());
        assertEquals(3, s.availablePermits(), "a failed over-release changes nothing");
        s.release(1);
        assertEquals(4, s.availablePermits());
        assertEquals(s.capacity(), s.availablePermits());
    }

    @Test
    void overReleaseStaysExactWithDebt() {
        Semaphore s = new Semaphore(5);
        assertTrue(s.tryAcquire(5));
        s.setCapacity(2); // owes 3; held 5 = capacity 2 + debt 3
        assertThrows(IllegalStateException.class, () -> s.release(6));
        s.release(5); // pays 3, frees 2
        assertEquals(2, s.availablePermits());
        assertThrows(IllegalStateException.class, () -> s.release(1));
        assertEquals(2, s.availablePermits());
    }

    @Test
    void aQueuedRequestHeavierThanTheNewCapacityFailsAtOnceAndTheOnesBehindItMayBeServed() throws Exception {
        Semaphore s = new Semaphore(8);
        assertTrue(s.tryAcquire(6)); // 2 free
        AtomicInteger wakes = new AtomicInteger();
        Acquisition heavy = s.acquireThen(5, wakes::incrementAndGet); // takes the 2 free as partial
        CompletableFuture<Permits> future = s.acquireAsync(6);
        RecordingWaker light = new RecordingWaker();
        Acquisition small = s.acquireThen(2, light);
        s.setCapacity(4); // heavy (5) and future (6) can never fit now
        assertTrue(heavy.failure() instanceof IllegalStateException);
        assertTrue(
                heavy.failure().getMessage().contains("5")
                        && heavy.failure().getMessage().contains("4"),
                heavy.failure().getMessage());
        assertFalse(heavy.isGranted());
        assertFalse(heavy.isClosed());
        assertEquals(1, wakes.get(), "a callback acquisition that can never fit is woken, not granted");
        ExecutionException e = assertThrows(ExecutionException.class, () -> future.get(WAIT_MS, TimeUnit.MILLISECONDS));
        assertTrue(e.getCause() instanceof IllegalStateException);
        // heavy's 2 partial permits went on: to the debt first (8 -> 4 with 6 held and 0 free:
        // debt 4), so the small request still waits.
        assertFalse(small.isGranted());
        assertEquals(1, s.queueLength());
        s.release(6); // pays 2 more debt, then 2 to the small request, 2 free? capacity 4: 2 held by small
        assertTrue(small.isGranted());
        assertEquals(2, s.availablePermits());
        s.release(2);
        assertEquals(4, s.availablePermits());
    }

    @Test
    void availableIsZeroWhileInDebtAndSetCapacityRejectsBadInput() {
        Semaphore s = new Semaphore(3);
        IllegalArgumentException neg = assertThrows(IllegalArgumentException.class, () -> s.setCapacity(-1));
        assertTrue(neg.getMessage().contains("setCapacity(-1)"), neg.getMessage());
        assertThrows(IllegalArgumentException.class, () -> s.setCapacity(Semaphore.MAX_PERMITS + 1));
        assertEquals(3, s.capacity());
        assertTrue(s.tryAcquire(3));
        s.setCapacity(0);
        assertEquals(0, s.availablePermits());
        assertEquals(0, s.capacity());
        assertTrue(s.tryAcquire(0));
        assertThrows(IllegalArgumentException.class, () -> s.acquireAsync(1));
        s.release(3);
        assertEquals(0, s.availablePermits());
        s.setCapacity(3);
        assertEquals(3, s.availablePermits());
    }

    // ------------------------------------------------------------------ shedding

    @Test
    void sheddingByWeightRejectsOnlyWhatWouldHaveToQueue() throws Exception {
        Semaphore s = Semaphore.builder(4).maxQueuedPermits(5).build();
        assertTrue(s.tryAcquire(3)); // 1 free
        Acquisition granted = s.acquireThen(1, () -> {}); // can be granted at once: never shed
        assertTrue(granted.isGranted());
        Acquisition a = s.acquireThen(3, () -> {});
        assertEquals(3, s.queuedPermits());
        SemaphoreRejectedException r = assertThrows(SemaphoreRejectedException.class, () -> s.acquireThen(3, () -> {}));
        assertTrue(
                r.getMessage().contains("acquireThen(3, waker)")
                        && r.getMessage().contains("maxQueuedPermits 5"),
                r.getMessage());
        assertEquals(1, s.queueLength(), "nothing queued by the rejected call");
        assertEquals(3, s.queuedPermits());
        Acquisition b = s.acquireThen(2, () -> {}); // 3 + 2 <= 5
        assertEquals(5, s.queuedPermits());
        CompletableFuture<Permits> shedFuture = s.acquireAsync(1);
        assertTrue(shedFuture.isCompletedExceptionally());
        assertThrows(SemaphoreRejectedException.class, () -> s.acquireBlocking(1));
        assertThrows(SemaphoreRejectedException.class, () -> s.tryAcquireBlocking(1, Duration.ofSeconds(1)));
        assertTrue(s.tryAcquireAsync(1, Duration.ofSeconds(1)).isCompletedExceptionally());
        s.release(4); // a gets 3, b gets 1 of 2
        assertTrue(a.isGranted());
        assertEquals(2, s.queuedPermits());
        s.release(3);
        assertTrue(b.isGranted());
        assertEquals(0, s.queuedPermits());
        s.release(2);
        assertEquals(4, s.availablePermits());
    }

    @Test
    void maxQueueLengthZeroMeansNeverQueue() {
        Semaphore s = Semaphore.builder(2).maxQueueLength(0).build();
        assertTrue(s.acquireThen(2, () -> {}).isGranted());
        assertThrows(SemaphoreRejectedException.class, () -> s.acquireThen(1, () -> {}));
        assertEquals(0, s.queueLength());
        s.release(2);
        assertEquals(2, s.availablePermits());
        assertThrows(IllegalArgumentException.class, () -> Semaphore.builder(1).maxQueueLength(-1));
        assertThrows(IllegalArgumentException.class, () -> Semaphore.builder(1).maxQueuedPermits(-1));
        assertThrows(IllegalArgumentException.class, () -> Semaphore.builder(-1));
    }

    @Test
    void aRefusedStartNamesTheAdaptersOwnCallWhenItGivesOne() {
        Semaphore s = Semaphore.builder(2).maxQueueLength(0).build();
        assertTrue(s.tryAcquire(2));
        class Named extends Acquisition {
            @Override
            protected String callName() {
                return "acquireRows";
            }

            @Override
            protected void wake() {}
        }
        class Unnamed extends Acquisition {
            @Override
            protected void wake() {}
        }
        class Throwing extends Acquisition {
            @Override
            protected String callName() {
                throw new IllegalStateException("a broken adapter");
            }

            @Override
            protected void wake() {}
        }
        SemaphoreRejectedException named =
                assertThrows(SemaphoreRejectedException.class, () -> s.startAcquisition(1, new Named()));
        assertTrue(
                named.getMessage().startsWith("acquireRows(1): rejected, the wait queue is full"), named.getMessage());
        SemaphoreRejectedException unnamed =
                assertThrows(SemaphoreRejectedException.class, () -> s.startAcquisition(1, new Unnamed()));
        assertTrue(unnamed.getMessage().startsWith("startAcquisition(1): rejected"), unnamed.getMessage());
        // A callName() that throws leaves the refusal as it was, naming the method.
        SemaphoreRejectedException throwing =
                assertThrows(SemaphoreRejectedException.class, () -> s.startAcquisition(2, new Throwing()));
        assertTrue(throwing.getMessage().startsWith("startAcquisition(2): rejected"), throwing.getMessage());
        // A weight above the capacity (say, after a shrink that raced the adapter's own check) too.
        Named heavy = new Named();
        IllegalArgumentException tooHeavy =
                assertThrows(IllegalArgumentException.class, () -> s.startAcquisition(3, heavy));
        assertEquals("acquireRows(3): exceeds the capacity 2, so it could never be granted", tooHeavy.getMessage());
        assertNull(heavy.startedOn(), "refused before it started");
        IllegalArgumentException tooHeavyThrowing =
                assertThrows(IllegalArgumentException.class, () -> s.startAcquisition(3, new Throwing()));
        assertEquals(
                "startAcquisition(3): exceeds the capacity 2, so it could never be granted",
                tooHeavyThrowing.getMessage());
        assertEquals(0, s.queueLength());
        s.release(2);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void aNodeFindsTheFaceThatStartedIt() {
        class Node extends Acquisition {
            Object face() {
                return startedOn();
            }

            @Override
            protected void wake() {}
        }
        Semaphore semaphore = Semaphore.builder(2).build();
        Mutex mutex = new Mutex();
        RwLock lock = new RwLock(2);
        Node fresh = new Node();
        assertNull(fresh.face(), "not started yet");
        semaphore.startAcquisition(1, fresh);
        assertSame(semaphore, fresh.face());
        Node waiting = new Node();
        assertTrue(mutex.tryLock());
        mutex.startLock(waiting);
        assertSame(mutex, waiting.face(), "a waiting node too");
        Node reader = new Node();
        Node writer = new Node();
        lock.startReadLock(reader);
        lock.startWriteLock(writer);
        assertSame(lock, reader.face());
        assertSame(lock, writer.face());
        Node plain = new Node();
        new Semaphore(1).startAcquisition(1, plain);
        assertNotSame(semaphore, plain.face());
        assertInstanceOf(Semaphore.class, plain.face(), "the plain constructor's semaphore");
        assertTrue(waiting.cancel());
        assertSame(mutex, waiting.face(), "still known after it settled");
    }

    @Test
    void eightRacingThreadsNeverQueueMoreThanTheBound() throws Exception {
        int bound = 10;
        for (int round = 0; round < 200; round++) {
            Semaphore s = Semaphore.builder(3).maxQueuedPermits(bound).build(); // every weight 1..3 fits
            assertTrue(s.tryAcquire(3));
            AtomicLong queuedWeight = new AtomicLong(); // independent count of what was accepted
            List<Acquisition> accepted = java.util.Collections.synchronizedList(new ArrayList<>());
            CountDownLatch go = new CountDownLatch(1);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                threads.add(new Thread(() -> {
                    await(go);
                    for (int i = 0; i < 4; i++) {
                        long w = 1 + ThreadLocalRandom.current().nextInt(3);
                        try {
                            accepted.add(s.acquireThen(w, () -> {}));
                            queuedWeight.addAndGet(w);
                        } catch (SemaphoreRejectedException shed) {
                            // over the bound: fine
                        }
                    }
                }));
            }
            threads.forEach(Thread::start);
            go.countDown();
            for (Thread t : threads) {
                t.join(WAIT_MS);
            }
            assertTrue(queuedWeight.get() > bound - 3, "the bound was never approached: " + queuedWeight.get());
            assertTrue(queuedWeight.get() <= bound, "accepted " + queuedWeight.get() + " > " + bound);
            assertEquals(queuedWeight.get(), s.queuedPermits());
            for (Acquisition a : accepted) {
                a.cancel();
            }
            s.release(3);
            assertEquals(3, s.availablePermits());
        }
    }

    // ------------------------------------------------------------------ up-to

    @Test
    void tryAcquireUpToTakesWhatIsFreeAndNeverBarges() {
        Semaphore s = new Semaphore(5);
        assertEquals(3, s.tryAcquireUpTo(3));
        assertEquals(2, s.tryAcquireUpTo(10));
        assertEquals(0, s.tryAcquireUpTo(10));
        assertEquals(0, s.tryAcquireUpTo(0));
        s.release(2);
        CompletableFuture<Permits> waiting = s.acquireAsync(4); // takes the 2 free as partial
        assertEquals(0, s.tryAcquireUpTo(1), "never takes anything while someone waits");
        assertThrows(IllegalArgumentException.class, () -> s.tryAcquireUpTo(-1));
        s.release(3);
        assertTrue(waiting.isDone());
        s.release(4);
        s.close();
        assertEquals(0, s.tryAcquireUpTo(5), "closed");
    }

    @Test
    void aQueuedUpToRequestKeepsFifoAndTakesWhatIsHandedUpToMax() throws Exception {
        Semaphore s = new Semaphore(10);
        assertTrue(s.tryAcquire(10));
        CompletableFuture<Permits> heavy = s.acquireAsync(6);
        CompletableFuture<Permits> upTo = s.acquireUpToAsync(2, 5);
        s.release(7); // the heavy head takes 6 first; 1 left is not enough for the up-to (min 2)
        assertTrue(heavy.isDone());
        assertFalse(upTo.isDone());
        s.release(3); // 1 + 3 = 4 handed: at least 2, so it takes all 4 (max 5)
        assertEquals(4L, upTo.get(WAIT_MS, TimeUnit.MILLISECONDS).permits());
        assertEquals(0, s.availablePermits());
        s.release(6);
        s.release(4);
        assertEquals(10, s.availablePermits());
        assertEquals(5L, s.acquireUpToAsync(1, 5).get().permits(), "granted at once: as many as free, up to max");
        assertEquals(5L, s.acquireUpToBlocking(3, 9).permits());
        assertEquals(0, s.availablePermits());
        s.release(10);
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> s.acquireUpToAsync(3, 2));
        assertTrue(bad.getMessage().contains("acquireUpToAsync(3, 2)"), bad.getMessage());
        assertThrows(IllegalArgumentException.class, () -> s.acquireUpToAsync(0, 2));
        assertThrows(IllegalArgumentException.class, () -> s.acquireUpToBlocking(11, 12));
        assertEquals(10, s.availablePermits());
    }

    @Test
    void upToRacesWithReleaseNeverLoseOrCreateAPermit() throws Exception {
        Semaphore s = new Semaphore(8);
        int rounds = 2_000;
        AtomicLong granted = new AtomicLong();
        for (int r = 0; r < rounds; r++) {
            assertTrue(s.tryAcquire(8));
            CompletableFuture<Permits> f = s.acquireUpToAsync(3, 6);
            Thread a = new Thread(() -> s.release(4));
            a.start();
            s.release(4);
            a.join(WAIT_MS);
            long got = f.get(WAIT_MS, TimeUnit.MILLISECONDS).permits();
            assertTrue(got >= 3 && got <= 6, "took " + got);
            granted.addAndGet(got);
            assertEquals(8 - got, s.availablePermits());
            s.release(got);
        }
        assertEquals(8, s.availablePermits());
        assertTrue(granted.get() >= 3L * rounds);
    }

    // ------------------------------------------------------------------ timed async

    @Test
    void timedAsyncIsTrueOnceGrantedFalseOnTimeoutAndHoldsNothingThen() throws Exception {
        Semaphore s = new Semaphore(3);
        assertTrue(s.tryAcquireAsync(2, Duration.ZERO).get());
        assertFalse(s.tryAcquireAsync(2, Duration.ZERO).get(), "zero timeout never waits");
        CompletableFuture<Boolean> timesOut = s.tryAcquireAsync(3, Duration.ofMillis(50)); // takes 1 as partial
        RecordingWaker next = new RecordingWaker();
        Acquisition behind = s.acquireThen(1, next);
        assertFalse(timesOut.get(WAIT_MS, TimeUnit.MILLISECONDS));
        assertTrue(behind.isGranted(), "the timed-out head's partial permit went on");
        CompletableFuture<Boolean> granted = s.tryAcquireAsync(2, Duration.ofSeconds(30));
        s.release(2);
        assertTrue(granted.get(WAIT_MS, TimeUnit.MILLISECONDS));
        s.release(2);
        s.release(1);
        assertEquals(3, s.availablePermits());
        assertThrows(UnsupportedOperationException.class, () -> granted.complete(false));
        s.close();
        ExecutionException closed = assertThrows(
                ExecutionException.class,
                () -> s.tryAcquireAsync(1, Duration.ofSeconds(1)).get());
        assertTrue(closed.getCause() instanceof SemaphoreClosedException);
        assertThrows(NullPointerException.class, () -> s.tryAcquireAsync(1, null));
    }

    @Test
    void timedAsyncRacingTheGrantIsExactEveryRound() throws Exception {
        Semaphore s = new Semaphore(1);
        int trues = 0;
        for (int r = 0; r < 3_000; r++) {
            assertTrue(s.tryAcquire(1));
            CompletableFuture<Boolean> f = s.tryAcquireAsync(1, Duration.ofNanos(20_000 + (r % 50) * 1_000));
            Thread.onSpinWait();
            s.release(1);
            if (f.get(WAIT_MS, TimeUnit.MILLISECONDS)) {
                trues++;
                assertEquals(0, s.availablePermits());
                s.release(1);
            }
            assertEquals(1, s.availablePermits(), "round " + r);
        }
        assertTrue(trues > 0);
    }

    @Test
    void timersOfRequestsGrantedInTimeDoNotKeepTheSemaphoreReachable() throws Exception {
        Semaphore s = new Semaphore(1);
        WeakReference<FifoCore> ref = new WeakReference<>(s.core());
        for (int i = 0; i < 20_000; i++) {
            assertTrue(s.tryAcquire(1));
            CompletableFuture<Boolean> f = s.tryAcquireAsync(1, Duration.ofHours(1)); // queued, with a timer
            s.release(1);
            assertTrue(f.get());
            s.release(1);
        }
        s = null;
        for (int i = 0; i < 50 && ref.get() != null; i++) {
            System.gc();
            Thread.sleep(20);
        }
        assertNull(ref.get(), "an hour-long timer still holds the semaphore after its request was granted");
    }

    // ------------------------------------------------------------------ closeAsync

    @Test
    void closeAsyncCompletesWhenTheLastPermitAndTheDebtComeBack() throws Exception {
        Semaphore s = new Semaphore(4);
        assertTrue(s.tryAcquire(3));
        s.setCapacity(2); // 1 free taken, owes 1
        CompletableFuture<Void> drained = s.closeAsync();
        assertFalse(drained.isDone());
        s.release(2);
        assertFalse(drained.isDone(), "1 still held");
        s.release(1);
        assertTrue(drained.isDone());
        assertTrue(new Semaphore(1).closeAsync().isDone(), "nothing held: at once");
    }

    @Test
    void closeAsyncRacingTheLastReleaseAlwaysCompletes() throws Exception {
        for (int r = 0; r < 5_000; r++) {
            Semaphore s = new Semaphore(2);
            assertTrue(s.tryAcquire(1));
            Thread releaser = new Thread(() -> s.release(1));
            releaser.start();
            CompletableFuture<Void> drained = s.closeAsync();
            releaser.join(WAIT_MS);
            drained.get(WAIT_MS, TimeUnit.MILLISECONDS);
        }
    }

    // ------------------------------------------------------------------ stress with resizes

    @Test
    void stressWithRandomResizesEndsWithEveryPermitBack() throws Exception {
        Semaphore s = Semaphore.builder(16).maxQueuedPermits(64).build();
        int threads = 6;
        int ops = 20_000;
        CountDownLatch go = new CountDownLatch(1);
        AtomicInteger errors = new AtomicInteger();
        List<Thread> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            all.add(new Thread(() -> {
                await(go);
                ThreadLocalRandom rnd = ThreadLocalRandom.current();
                for (int i = 0; i < ops; i++) {
                    try {
                        int op = rnd.nextInt(10);
                        if (op == 0) {
                            s.setCapacity(8 + rnd.nextInt(17));
                        } else if (op < 4) {
                            long got = s.tryAcquireUpTo(1 + rnd.nextInt(4));
                            if (got > 0) {
                                s.release(got);
                            }
                        } else if (op < 7) {
                            long w = 1 + rnd.nextInt(4);
                            if (s.tryAcquireBlocking(w, Duration.ofNanos(rnd.nextInt(200_000)))) {
                                s.release(w);
                            }
                        } else {
                            CompletableFuture<Permits> f = s.acquireUpToAsync(1, 1 + rnd.nextInt(6));
                            if (rnd.nextBoolean() && f.cancel(false)) {
                                continue;
                            }
                            long got = f.get(WAIT_MS, TimeUnit.MILLISECONDS).permits();
                            s.release(got);
                        }
                    } catch (SemaphoreRejectedException shed) {
                        // the queue bound: fine
                    } catch (IllegalArgumentException tooHeavyNow) {
                        // the weight exceeded a capacity just shrunk: refused before anything changed
                    } catch (ExecutionException failed) {
                        if (!(failed.getCause() instanceof IllegalStateException)) { // too heavy after a shrink
                            errors.incrementAndGet();
                        }
                    } catch (IllegalStateException tooHeavy) {
                        // a blocking wait failed by a shrink below its weight: nothing held
                    } catch (Exception e) {
                        errors.incrementAndGet();
                    }
                }
            }));
        }
        all.forEach(Thread::start);
        go.countDown();
        for (Thread t : all) {
            t.join(TimeUnit.SECONDS.toMillis(100));
        }
        assertEquals(0, s.queueLength());
        assertEquals(0, errors.get());
        assertEquals(s.capacity(), s.availablePermits());
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
