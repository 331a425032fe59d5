// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The public surface: the suffix of a method names how it waits (none: never; {@code Then}: a
 * callback; {@code Async}: a future; {@code Blocking}: parks the thread), the one permit handle
 * {@link Permits}, {@code addCapacity}, and the names, builders and {@code close()} of every
 * primitive.
 */
class SurfaceTest {

    private static final long WAIT_MS = 30_000;

    // ------------------------------------------------------------------ the naming scheme

    /** The rule, for one method: empty if it follows the scheme, else why not. */
    static String violation(Method m) {
        String name = m.getName();
        List<Class<?>> params = Arrays.asList(m.getParameterTypes());
        boolean blocks = Arrays.asList(m.getExceptionTypes()).contains(InterruptedException.class);
        if (params.contains(Waker.class) && !name.endsWith("Then")) {
            return name + " takes a Waker: its name must end with Then";
        }
        if (params.contains(Duration.class) && !(name.endsWith("Blocking") || name.endsWith("Async"))) {
            return name + " takes a java.time.Duration: its name must end with Blocking or Async";
        }
        if (blocks && !name.endsWith("Blocking")) {
            return name + " parks the thread (throws InterruptedException): its name must end with Blocking";
        }
        if (CompletableFuture.class.isAssignableFrom(m.getReturnType()) && !(name.endsWith("Async"))) {
            return name + " returns a future: its name must end with Async";
        }
        if ((name.endsWith("Then") && !params.contains(Waker.class))
                || (name.endsWith("Blocking") && !blocks)
                || (name.endsWith("Async") && !CompletableFuture.class.isAssignableFrom(m.getReturnType()))) {
            return name + ": its suffix promises a face it does not have";
        }
        return "";
    }

    static List<String> violations(Class<?> type) {
        List<String> found = new ArrayList<>();
        for (Method m : type.getMethods()) {
            if (m.getDeclaringClass() == Object.class || !Modifier.isPublic(m.getModifiers())) {
                continue;
            }
            String v = violation(m);
            if (!v.isEmpty()) {
                found.add(type.getSimpleName() + "." + v);
            }
        }
        return found;
    }

    @Test
    void everyPublicMethodOfThePrimitivesNamesItsFace() {
        List<String> found = new ArrayList<>();
        for (Class<?> type : List.of(Semaphore.class, Mutex.class, RwLock.class, Acquisition.class, Permits.class)) {
            found.addAll(violations(type));
        }
        assertEquals(List.of(), found);
    }

    /** The old names, kept here only to show that the scan catches them. */
    @SuppressWarnings("unused")
    public static final class OldNames {
        public Acquisition acquire(long n, Waker waker) {
            return null;
        }

        public boolean tryAcquire(long n, Duration timeout) throws InterruptedException {
            return false;
        }

        public void lockBlocking(Duration timeout) {}

        public CompletableFuture<Void> lock() {
            return null;
        }
    }

    @Test
    void theScanCatchesTheOldNames() {
        List<String> found = violations(OldNames.class);
        assertEquals(4, found.size(), found::toString);
        assertTrue(found.stream().anyMatch(v -> v.startsWith("OldNames.acquire takes a Waker")), found::toString);
        assertTrue(
                found.stream().anyMatch(v -> v.startsWith("OldNames.tryAcquire takes a java.time.Duration")),
                found::toString);
    }

    // ------------------------------------------------------------------ the permit handle

    @Test
    void aBlockingHandleReleasesOnceAndWorksWithTryWithResources() throws Exception {
        Semaphore s = new Semaphore(10);
        try (Permits p = s.acquireBlocking(4)) {
            assertEquals(4, p.permits());
            assertFalse(p.isReleased());
            assertEquals(6, s.availablePermits());
        }
        assertEquals(10, s.availablePermits());
        Permits p = s.acquireBlocking(3);
        assertTrue(p.release());
        assertFalse(p.release());
        p.close(); // idempotent: nothing more is released
        assertTrue(p.isReleased());
        assertEquals(10, s.availablePermits());
        assertEquals(3, p.permits(), "permits() is what it held, also after the release");
        IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> {
            try (Permits held = s.acquireBlocking(10)) {
                throw new IllegalStateException("work failed while holding " + held.permits());
            }
        });
        assertEquals("work failed while holding 10", thrown.getMessage());
        assertEquals(10, s.availablePermits(), "released although the block threw");
    }

    @Test
    void aHandleWhosePermitsWereGivenBackBehindItsBackThrowsAndCountsAsReleased() throws Exception {
        Semaphore s = new Semaphore(5);
        Permits p = s.acquireBlocking(5);
        s.release(5); // by count, behind the handle's back
        IllegalStateException e = assertThrows(IllegalStateException.class, p::release);
        assertTrue(e.getMessage().contains("release(5)"), e.getMessage());
        assertTrue(p.isReleased());
        assertFalse(p.release(), "counts as released from then on");
        assertEquals(5, s.availablePermits(), "nothing changed");
    }

    /**
     * A second release() of a handle whose first release is still giving the permits back waits
     * for it: it answers "already released" only once the permits are back, and isReleased() is
     * false until then. The first release is held inside by a waker it runs (on its thread).
     */
    @Test
    void aConcurrentSecondReleaseWaitsUntilThePermitsAreBack() throws Exception {
        Semaphore s = new Semaphore(2);
        Permits p = s.acquireBlocking(2);
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch open = new CountDownLatch(1);
        Acquisition next = s.acquireThen(1, () -> {
            inside.countDown();
            try {
                open.await(WAIT_MS, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        AtomicReference<Boolean> first = new AtomicReference<>();
        Thread releaser = new Thread(() -> first.set(p.release()), "first release");
        releaser.start();
        assertTrue(inside.await(WAIT_MS, TimeUnit.MILLISECONDS));
        assertTrue(next.isGranted());
        assertFalse(p.isReleased(), "still being released");
        AtomicReference<Boolean> second = new AtomicReference<>();
        Thread again = new Thread(() -> second.set(p.release()), "second release");
        again.start();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
        while (!(again.getState() == Thread.State.TIMED_WAITING
                && java.util.concurrent.locks.LockSupport.getBlocker(again) == p)) {
            assertTrue(
                    again.isAlive(),
                    "the second release returned while the first was still giving back: " + second.get());
            assertTrue(System.nanoTime() < deadline, "the second release never waited: " + again.getState());
            Thread.onSpinWait();
        }
        open.countDown();
        releaser.join(WAIT_MS);
        again.join(WAIT_MS);
        assertEquals(Boolean.TRUE, first.get());
        assertEquals(Boolean.FALSE, second.get());
        assertTrue(p.isReleased());
        s.release(1); // next's permit
        assertEquals(2, s.availablePermits());
    }

    @Test
    void aQueuedBlockingWaitReturnsItsOwnNodeAsTheHandle() throws Exception {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        AtomicReference<Permits> got = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                got.set(s.acquireBlocking(2));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        t.start();
        while (s.queueLength() == 0) {
            Thread.onSpinWait();
        }
        s.release(2);
        t.join(WAIT_MS);
        Permits p = got.get();
        assertTrue(p instanceof ParkingAcquisition, "no second object for the handle: " + p);
        assertEquals(2, p.permits());
        p.close();
        assertEquals(2, s.availablePermits());
    }

    @Test
    void anAsyncGrantAtOnceIsOneObjectAndAQueuedOneCompletesWithItsNode() throws Exception {
        Semaphore s = new Semaphore(3);
        CompletableFuture<Permits> now = s.acquireAsync(2);
        assertSame(now, now.getNow(null), "granted at once: the future is its own value (one allocation)");
        assertThrows(UnsupportedOperationException.class, () -> now.obtrudeValue(null));
        CompletableFuture<Permits> later = s.acquireAsync(3); // queued, the free permit handed to it
        assertFalse(later.isDone());
        assertTrue(now.join().release()); // 1 + 2 = 3: granted
        Permits p = later.get(WAIT_MS, TimeUnit.MILLISECONDS);
        assertTrue(
                p instanceof FutureAcquisition.Node,
                "queued: the future's value is its queue node, no second object: " + p);
        assertEquals(3, p.permits());
        assertEquals("Permits[3, held]", p.toString());
        p.close();
        assertEquals("Permits[3, released]", p.toString());
        assertEquals("Permits[2, released]", now.toString(), "every handle reads the same");
        assertEquals(3, s.availablePermits());
    }

    @Test
    void upToHandlesHoldWhatWasTaken() throws Exception {
        Semaphore s = new Semaphore(8);
        assertTrue(s.tryAcquire(5));
        try (Permits p = s.acquireUpToBlocking(2, 6)) {
            assertEquals(3, p.permits(), "the 3 free, at least 2, up to 6");
        }
        CompletableFuture<Permits> f = s.acquireUpToAsync(4, 8);
        assertFalse(f.isDone());
        s.release(5); // 3 free + 5 = 8 handed: takes all 8
        Permits p = f.get(WAIT_MS, TimeUnit.MILLISECONDS);
        assertEquals(8, p.permits());
        assertTrue(p.release());
        assertEquals(8, s.availablePermits());
    }

    @Test
    void lockHandlesUnlock() throws Exception {
        Mutex m = new Mutex();
        try (Permits held = m.lockBlocking()) {
            assertEquals(1, held.permits());
            assertTrue(m.isLocked());
        }
        assertFalse(m.isLocked());
        Permits async = m.lockAsync().get(WAIT_MS, TimeUnit.MILLISECONDS);
        assertTrue(m.isLocked());
        async.close();
        assertFalse(m.isLocked());

        RwLock rw = new RwLock(4);
        try (Permits r1 = rw.readLockBlocking();
                Permits r2 = rw.readLockAsync().join()) {
            assertEquals(2, rw.readLockCount());
            assertEquals(1, r1.permits());
            assertEquals(1, r2.permits());
        }
        assertEquals(0, rw.readLockCount());
        try (Permits w = rw.writeLockBlocking()) {
            assertEquals(4, w.permits());
            assertTrue(rw.isWriteLocked());
        }
        assertFalse(rw.isWriteLocked());
        Permits w = rw.writeLockAsync().join();
        rw.downgrade();
        assertEquals(1, rw.readLockCount(), "the downgraded read lock is held");
        w.close(); // releases what the handle holds now: the read lock
        assertTrue(w.isReleased());
        assertEquals(0, rw.readLockCount());
        assertTrue(rw.tryWriteLock());
    }

    // ------------------------------------------------------------------ addCapacity

    @Test
    void addCapacityFromEightThreadsEndsAtTheExactSum() throws Exception {
        long start = 1_000_000;
        Semaphore s = new Semaphore(start);
        int threads = 8;
        int each = 10_000;
        AtomicLong sum = new AtomicLong();
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        for (int i = 0; i < threads; i++) {
            SplittableRandom random = new SplittableRandom(42 + i);
            Thread t = new Thread(() -> {
                try {
                    go.await();
                    long mine = 0;
                    for (int k = 0; k < each; k++) {
                        long delta = random.nextLong(-10, 11);
                        long after = s.addCapacity(delta);
                        assertTrue(after >= 0 && after <= Semaphore.MAX_PERMITS, "returned " + after);
                        mine += delta;
                    }
                    sum.addAndGet(mine);
                } catch (Throwable e) {
                    failed.set(e);
                }
            });
            t.start();
            workers.add(t);
        }
        go.countDown();
        for (Thread t : workers) {
            t.join(WAIT_MS);
            assertFalse(t.isAlive(), "worker hangs");
        }
        assertEquals(null, failed.get());
        assertEquals(start + sum.get(), s.capacity());
        assertEquals(s.capacity(), s.availablePermits(), "nothing held: every permit free, no debt");
    }

    @Test
    void addCapacityGrowsIntoTheQueueShrinksWithDebtAndRefusesWhatDoesNotFit() throws Exception {
        Semaphore s = new Semaphore(4);
        assertTrue(s.tryAcquire(4));
        CompletableFuture<Permits> waiter = s.acquireAsync(2);
        assertEquals(6, s.addCapacity(2));
        assertTrue(waiter.isDone(), "the growth was handed to the queue");
        assertEquals(3, s.addCapacity(-3)); // nothing free: all of it is owed
        s.release(4); // pays the debt of 3 first; 1 becomes free
        assertEquals(1, s.availablePermits());
        IllegalArgumentException low = assertThrows(IllegalArgumentException.class, () -> s.addCapacity(-4));
        assertTrue(
                low.getMessage().startsWith("addCapacity(-4): the capacity 3 - 4 must be between 0 and MAX_PERMITS"),
                low.getMessage());
        IllegalArgumentException high =
                assertThrows(IllegalArgumentException.class, () -> s.addCapacity(Long.MAX_VALUE));
        assertTrue(high.getMessage().contains("MAX_PERMITS (" + Semaphore.MAX_PERMITS + ")"), high.getMessage());
        IllegalArgumentException lowest =
                assertThrows(IllegalArgumentException.class, () -> s.addCapacity(Long.MIN_VALUE));
        assertTrue(
                lowest.getMessage()
                        .startsWith("addCapacity(-9223372036854775808): the capacity 3 - 9223372036854775808 must"),
                lowest.getMessage());
        assertEquals(3, s.capacity(), "a refused change changes nothing");
        assertEquals(1, s.availablePermits());
        waiter.join().close();
        assertEquals(3, s.availablePermits());
    }

    // ------------------------------------------------------------------ names, builders, close

    @Test
    void everyPrimitiveCanBeNamedAndShowsItsName() {
        assertEquals("uploads", Semaphore.builder(4).name("uploads").build().name());
        assertTrue(Semaphore.builder(4)
                .name("uploads")
                .build()
                .toString()
                .startsWith("Semaphore[name=uploads, capacity=4"));
        assertEquals(null, new Semaphore(4).name());
        assertTrue(Mutex.builder().name("journal").build().toString().startsWith("Mutex[name=journal, unlocked"));
        assertTrue(RwLock.builder(8).name("cache").build().toString().startsWith("RwLock[name=cache, maxReaders=8"));
        NullPointerException none =
                assertThrows(NullPointerException.class, () -> Mutex.builder().name(null));
        assertEquals("name(null): the name is null", none.getMessage());
        IllegalArgumentException blank = assertThrows(
                IllegalArgumentException.class, () -> RwLock.builder(2).name(" "));
        assertEquals("name(\" \"): the name must not be blank", blank.getMessage());
    }

    @Test
    void mutexAndRwLockShedAndTellTheirListener() throws Exception {
        WaitListenerTest.Log log = new WaitListenerTest.Log();
        Mutex m = Mutex.builder().maxQueueLength(1).listener(log).build();
        assertTrue(m.tryLock());
        CompletableFuture<Permits> queued = m.lockAsync();
        CompletableFuture<Permits> shed = m.lockAsync();
        ExecutionException e = assertThrows(ExecutionException.class, () -> shed.get(WAIT_MS, TimeUnit.MILLISECONDS));
        assertTrue(e.getCause() instanceof SemaphoreRejectedException, String.valueOf(e.getCause()));
        assertThrows(SemaphoreRejectedException.class, m::lockBlocking);
        m.unlock();
        queued.get(WAIT_MS, TimeUnit.MILLISECONDS).close();
        assertFalse(m.isLocked());
        assertTrue(log.snapshot().contains("rejected 1"), log.snapshot()::toString);
        assertTrue(log.snapshot().contains("queued 1 ahead 0"), log.snapshot()::toString);

        RwLock rw = RwLock.builder(2).maxQueueLength(0).build();
        assertTrue(rw.tryWriteLock());
        assertThrows(SemaphoreRejectedException.class, rw::readLockBlocking);
        rw.writeUnlock();
    }

    @Test
    void closingAMutexOrRwLockFailsItsWaitersAndLetsHoldersUnlock() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLock());
        CompletableFuture<Permits> waiter = m.lockAsync();
        RecordingWaker callback = new RecordingWaker();
        Acquisition a = m.lockThen(callback);
        m.close();
        assertTrue(m.isClosed());
        assertTrue(m.toString().endsWith(", closed]"), m.toString());
        ExecutionException e = assertThrows(ExecutionException.class, () -> waiter.get(WAIT_MS, TimeUnit.MILLISECONDS));
        assertTrue(e.getCause() instanceof SemaphoreClosedException, String.valueOf(e.getCause()));
        assertTrue(a.isClosed());
        assertEquals(1, callback.wakes.get());
        assertFalse(m.tryLock());
        assertThrows(SemaphoreClosedException.class, m::lockBlocking);
        m.unlock(); // the holder can still let go
        assertFalse(m.isLocked());

        RwLock rw = new RwLock(2);
        assertTrue(rw.tryReadLock());
        CompletableFuture<RwLock.WritePermits> writer = rw.writeLockAsync();
        rw.close();
        assertTrue(rw.isClosed());
        assertThrows(ExecutionException.class, () -> writer.get(WAIT_MS, TimeUnit.MILLISECONDS));
        assertFalse(rw.isWriteLocked());
        assertFalse(rw.tryReadLock());
        rw.readUnlock();
        assertEquals(0, rw.readLockCount());
    }

    @Test
    void timedAsyncLocksAnswerExactly() throws Exception {
        Mutex m = new Mutex();
        assertTrue(m.tryLockAsync(Duration.ZERO).get(WAIT_MS, TimeUnit.MILLISECONDS));
        assertFalse(
                m.tryLockAsync(Duration.ZERO).get(WAIT_MS, TimeUnit.MILLISECONDS),
                "locked: a zero timeout does not wait");
        CompletableFuture<Boolean> later = m.tryLockAsync(Duration.ofMinutes(1));
        assertFalse(later.isDone());
        m.unlock();
        assertTrue(later.get(WAIT_MS, TimeUnit.MILLISECONDS));
        CompletableFuture<Boolean> timesOut = m.tryLockAsync(Duration.ofMillis(1));
        assertFalse(timesOut.get(WAIT_MS, TimeUnit.MILLISECONDS));
        m.unlock();
        assertFalse(m.isLocked(), "the timed-out wait holds nothing");

        RwLock rw = new RwLock(3);
        assertTrue(rw.tryReadLockAsync(Duration.ZERO).join());
        CompletableFuture<Boolean> writer = rw.tryWriteLockAsync(Duration.ofMinutes(1));
        assertFalse(writer.isDone());
        assertFalse(rw.tryReadLockAsync(Duration.ZERO).join(), "a waiting writer keeps later readers out");
        rw.readUnlock();
        assertTrue(writer.get(WAIT_MS, TimeUnit.MILLISECONDS));
        assertTrue(rw.isWriteLocked(), "a timed async write grant sets the write flag");
        rw.writeUnlock();
        NullPointerException npe = assertThrows(NullPointerException.class, () -> rw.tryWriteLockAsync(null));
        assertEquals("tryWriteLockAsync(null): the timeout is null", npe.getMessage());
    }
}
