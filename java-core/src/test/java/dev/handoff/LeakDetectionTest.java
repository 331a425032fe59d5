// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The opt-in leak detector of {@link Permits} handles ({@link LeakDetection}). */
@Timeout(120) // a guard against hangs, not a speed check
class LeakDetectionTest {

    private final List<String> reports = new CopyOnWriteArrayList<>();

    @BeforeEach
    void captureReports() {
        PermitLeaks.sink = reports::add;
    }

    @AfterEach
    void restoreReports() {
        PermitLeaks.sink = null;
    }

    /** Collects garbage until {@code done}; false if it never came (the collector is not bound to). */
    private static boolean collectUntil(BooleanSupplier done) throws InterruptedException {
        for (int i = 0; i < 200 && !done.getAsBoolean(); i++) {
            System.gc();
            Thread.sleep(20);
        }
        return done.getAsBoolean();
    }

    private static void collect(int times) throws InterruptedException {
        for (int i = 0; i < times; i++) {
            System.gc();
            Thread.sleep(20);
        }
    }

    /** Acquires and drops the handle: the frame holding it is gone when this returns. */
    private static void leakBlockingHandle(Semaphore s, long n) throws InterruptedException {
        s.acquireBlocking(n);
    }

    @Test
    void releaseModeReportsTheSiteAndGivesTheLeakedPermitsBack() throws InterruptedException {
        Semaphore s = Semaphore.builder(3)
                .name("leaky")
                .leakDetection(LeakDetection.RELEASE)
                .build();
        leakBlockingHandle(s, 2);
        assertEquals(1, s.availablePermits());
        assertTrue(collectUntil(() -> s.availablePermits() == 3 && !reports.isEmpty()), s::toString);
        assertEquals(1, reports.size(), reports::toString);
        String report = reports.get(0);
        assertTrue(report.startsWith("LEAK: a Permits handle of 2 permits of Semaphore[name=leaky"), report);
        assertTrue(report.contains("its permits were given back"), report);
        assertTrue(report.contains("acquireBlocking(2) acquired the handle here"), report);
        assertTrue(report.contains("leakBlockingHandle"), report); // the acquisition site
    }

    @Test
    void reportModeKeepsThePermitsHeldAndReportsASiteOnce() throws InterruptedException {
        Semaphore s = Semaphore.builder(4).leakDetection(LeakDetection.REPORT).build();
        leakTwiceFromOneSite(s);
        assertTrue(collectUntil(() -> !reports.isEmpty()));
        collect(20); // more collections: a second report would come now
        assertEquals(1, reports.size(), reports::toString);
        assertTrue(reports.get(0).contains("its permits stay held"), reports.get(0));
        assertEquals(2, s.availablePermits());
    }

    @Test
    void aCancelledChainOnAGrantedFutureIsCaught() throws InterruptedException {
        Semaphore s = Semaphore.builder(1).leakDetection(LeakDetection.RELEASE).build();
        leakThroughACancelledChain(s);
        assertEquals(0, s.availablePermits());
        assertTrue(collectUntil(() -> s.availablePermits() == 1 && !reports.isEmpty()), s::toString);
        assertTrue(reports.get(0).contains("acquireAsync(1) acquired the handle here"), reports.toString());
    }

    @Test
    void aMutexHandleLeakedIsReportedAndUnlocked() throws InterruptedException {
        Mutex journal = Mutex.builder()
                .name("journal")
                .leakDetection(LeakDetection.RELEASE)
                .build();
        leakMutexHandle(journal);
        assertTrue(journal.isLocked());
        assertTrue(collectUntil(() -> !journal.isLocked() && !reports.isEmpty()), journal::toString);
        assertTrue(
                reports.get(0).startsWith("LEAK: a Permits handle of 1 permit of Mutex[name=journal"), reports.get(0));
        assertTrue(reports.get(0).contains("leakMutexHandle"), reports.get(0));
        assertTrue(journal.tryLock()); // unlocked for good: the next caller gets in
        journal.unlock();
    }

    private static void leakMutexHandle(Mutex mutex) throws InterruptedException {
        mutex.lockBlocking();
    }

    @Test
    void rwLockReadHandlesLeakedAreReportedAndUnlocked() throws InterruptedException {
        RwLock index = RwLock.builder(4)
                .name("index")
                .leakDetection(LeakDetection.RELEASE)
                .build();
        leakReadHandles(index);
        assertEquals(2, index.readLockCount()); // one from readLockBlocking, one from a write handle's downgrade
        assertTrue(collectUntil(() -> index.readLockCount() == 0 && reports.size() == 2), index::toString);
        assertTrue(
                reports.stream().allMatch(r -> r.startsWith("LEAK: a Permits handle of 1 permit of RwLock[name=index")),
                reports::toString);
        assertTrue(reports.stream().allMatch(r -> r.contains("leakReadHandles")), reports::toString);
        assertTrue(index.tryWriteLock()); // no reader left: a writer gets in
        index.writeUnlock();
    }

    private static void leakReadHandles(RwLock lock) throws InterruptedException {
        lock.writeLockBlocking().downgrade(); // the write lock first: a reader would keep the writer out
        lock.readLockBlocking();
    }

    @Test
    void rwLockWriteHandlesLeakedAreReportedAndUnlocked() throws InterruptedException {
        RwLock ledger = RwLock.builder(4)
                .name("ledger")
                .leakDetection(LeakDetection.RELEASE)
                .build();
        leakWriteHandle(ledger);
        assertTrue(ledger.isWriteLocked());
        assertTrue(collectUntil(() -> !ledger.isWriteLocked() && reports.size() == 1), ledger::toString);
        String report = reports.get(0);
        assertTrue(report.startsWith("LEAK: a Permits handle of 4 permits of RwLock[name=ledger"), report);
        assertTrue(report.contains("(the write lock) became unreachable"), report);
        assertTrue(report.contains("its permits were given back"), report);
        assertTrue(report.contains("writeLockBlocking() acquired the handle here"), report);
        assertTrue(report.contains("leakWriteHandle"), report); // the acquisition site

        leakWriteHandleAsync(ledger);
        assertTrue(ledger.isWriteLocked());
        assertTrue(collectUntil(() -> !ledger.isWriteLocked() && reports.size() == 2), ledger::toString);
        assertTrue(reports.get(1).contains("writeLockAsync() acquired the handle here"), reports.get(1));
        assertTrue(reports.get(1).contains("leakWriteHandleAsync"), reports.get(1));
        assertEquals(0, ledger.readLockCount());
        assertTrue(ledger.tryWriteLock()); // unlocked for good: the next writer gets in
        ledger.writeUnlock();
    }

    private static void leakWriteHandle(RwLock lock) throws InterruptedException {
        lock.writeLockBlocking();
    }

    private static void leakWriteHandleAsync(RwLock lock) {
        lock.writeLockAsync().thenApply(Permits::permits).cancel(true); // granted; nobody will release it
    }

    @Test
    void aDowngradedWriteHandleLeakedIsAReadLeakAndItsReadLockIsGivenBack() throws InterruptedException {
        RwLock catalog = RwLock.builder(4)
                .name("catalog")
                .leakDetection(LeakDetection.RELEASE)
                .build();
        leakDowngradedWriteHandle(catalog);
        assertFalse(catalog.isWriteLocked());
        assertEquals(1, catalog.readLockCount());
        assertTrue(collectUntil(() -> catalog.readLockCount() == 0 && reports.size() == 1), catalog::toString);
        String report = reports.get(0);
        assertTrue(report.startsWith("LEAK: a Permits handle of 1 permit of RwLock[name=catalog"), report);
        assertTrue(report.contains("(a read lock, downgraded from the write lock) became unreachable"), report);
        assertFalse(report.contains("(the write lock)"), report);
        assertTrue(report.contains("its permits were given back"), report);
        assertTrue(report.contains("writeLockBlocking() acquired the handle here"), report);
        assertTrue(report.contains("leakDowngradedWriteHandle"), report);
        assertTrue(catalog.tryWriteLock()); // nothing left held: a writer gets in
        catalog.writeUnlock();
    }

    @Test
    void reportModeKeepsADowngradedWriteHandlesReadLock() throws InterruptedException {
        RwLock lock = RwLock.builder(4).leakDetection(LeakDetection.REPORT).build();
        leakDowngradedWriteHandleKept(lock);
        assertTrue(collectUntil(() -> !reports.isEmpty()), lock::toString);
        collect(5);
        assertEquals(1, reports.size(), reports::toString);
        assertTrue(reports.get(0).contains("(a read lock, downgraded from the write lock)"), reports.get(0));
        assertTrue(reports.get(0).contains("its permits stay held"), reports.get(0));
        assertEquals(1, lock.readLockCount());
        assertFalse(lock.isWriteLocked());
        lock.readUnlock();
    }

    private static void leakDowngradedWriteHandle(RwLock lock) throws InterruptedException {
        lock.writeLockBlocking();
        lock.downgrade(); // the handle now holds a read lock
    }

    private static void leakDowngradedWriteHandleKept(RwLock lock) throws InterruptedException {
        lock.writeLockBlocking();
        lock.downgrade();
    }

    @Test
    void closedWriteHandlesAreNeverReportedNorGiveBackTwice() throws InterruptedException {
        RwLock lock = RwLock.builder(4).leakDetection(LeakDetection.RELEASE).build();
        closeWriteHandles(lock);
        assertEquals(0, lock.readLockCount());
        assertTrue(lock.tryWriteLock()); // held by count: a second give-back of a closed handle would unlock it
        collect(20);
        assertTrue(lock.isWriteLocked(), lock::toString);
        lock.downgrade(); // now one read lock, by count: a second read unlock would take it
        collect(20);
        assertEquals(1, lock.readLockCount(), lock::toString);
        assertEquals(List.of(), reports);
        lock.readUnlock();
    }

    /** Write handles closed every way (plain, after either downgrade, async), then dropped. */
    private static void closeWriteHandles(RwLock lock) throws InterruptedException {
        for (int i = 0; i < 20; i++) {
            try (Permits write = lock.writeLockBlocking()) {
                assertFalse(write.isReleased());
            }
            try (Permits write = lock.writeLockBlocking()) {
                lock.downgrade();
                assertFalse(write.isReleased());
            }
            RwLock.WritePermits write = lock.writeLockBlocking();
            try (Permits read = write.downgrade()) {
                assertTrue(write.isReleased());
                assertFalse(read.isReleased());
            }
            write.close(); // does nothing: the read lock moved
            lock.writeLockAsync().join().release();
        }
    }

    @Test
    void fairShareHandlesLeakedAreReportedAndGivenBackToTheirKey() throws InterruptedException {
        FairShareSemaphore<String> pool = FairShareSemaphore.<String>builder(3)
                .name("tenants")
                .leakDetection(LeakDetection.RELEASE)
                .build();
        leakFairShareHandle(pool);
        assertEquals(2, pool.heldPermits("a"));
        assertTrue(collectUntil(() -> pool.heldPermits("a") == 0 && reports.size() == 1), pool::toString);
        String report = reports.get(0);
        assertTrue(report.startsWith("LEAK: a Permits handle of 2 permits of FairShareSemaphore[name=tenants"), report);
        assertTrue(report.contains("its permits were given back"), report);
        assertTrue(report.contains("acquireBlocking(a, 2) acquired the handle here"), report);
        assertTrue(report.contains("leakFairShareHandle"), report);

        leakFairShareHandleAsync(pool);
        assertEquals(1, pool.heldPermits("b"));
        assertTrue(collectUntil(() -> pool.heldPermits("b") == 0 && reports.size() == 2), pool::toString);
        assertTrue(reports.get(1).contains("acquireAsync(b, 1) acquired the handle here"), reports.get(1));
        assertTrue(reports.get(1).contains("leakFairShareHandleAsync"), reports.get(1));
        assertEquals(3, pool.availablePermits());
        assertEquals(0, pool.activeKeys());
    }

    @Test
    void fairShareHandlesGrantedAfterAWaitAreTrackedToo() throws InterruptedException {
        FairShareSemaphore<String> pool = FairShareSemaphore.<String>builder(3)
                .name("queued")
                .leakDetection(LeakDetection.RELEASE)
                .build();
        assertTrue(pool.tryAcquire("x", 3));
        Thread waiter = new Thread(() -> leakQueuedFairShareHandle(pool));
        waiter.start();
        while (pool.queueLength() == 0) {
            Thread.onSpinWait();
        }
        leakQueuedFairShareHandleAsync(pool); // queued behind the waiter
        pool.release("x", 3); // grants both: "c" 2 permits, "d" 1
        waiter.join();
        assertEquals(2, pool.heldPermits("c"));
        assertEquals(1, pool.heldPermits("d"));
        assertTrue(
                collectUntil(() -> pool.heldPermits("c") == 0 && pool.heldPermits("d") == 0 && reports.size() == 2),
                pool::toString);
        assertTrue(
                reports.stream()
                        .anyMatch(r -> r.contains("acquireBlocking(c, 2) acquired the handle here")
                                && r.contains("leakQueuedFairShareHandle")),
                reports::toString);
        assertTrue(
                reports.stream()
                        .anyMatch(r -> r.contains("acquireAsync(d, 1) acquired the handle here")
                                && r.contains("leakQueuedFairShareHandleAsync")),
                reports::toString);
        assertEquals(3, pool.availablePermits());
    }

    @Test
    void reportModeKeepsAFairShareKeysPermits() throws InterruptedException {
        FairShareSemaphore<String> pool = FairShareSemaphore.<String>builder(2)
                .leakDetection(LeakDetection.REPORT)
                .build();
        leakFairShareHandleKept(pool);
        assertTrue(collectUntil(() -> !reports.isEmpty()), pool::toString);
        assertTrue(reports.get(0).contains("its permits stay held"), reports.get(0));
        assertEquals(1, pool.heldPermits("k"));
        pool.release("k", 1);
    }

    private static void leakFairShareHandle(FairShareSemaphore<String> pool) {
        try {
            pool.acquireBlocking("a", 2);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    private static void leakFairShareHandleAsync(FairShareSemaphore<String> pool) {
        pool.acquireAsync("b", 1).thenApply(Permits::permits).cancel(true); // granted; nobody will release it
    }

    private static void leakQueuedFairShareHandle(FairShareSemaphore<String> pool) {
        try {
            pool.acquireBlocking("c", 2); // waits for the release of "x"
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    private static void leakQueuedFairShareHandleAsync(FairShareSemaphore<String> pool) {
        pool.acquireAsync("d", 1);
    }

    private static void leakFairShareHandleKept(FairShareSemaphore<String> pool) throws InterruptedException {
        pool.acquireBlocking("k", 1);
    }

    @Test
    void closedFairShareHandlesAreNeverReportedNorGiveBackTwice() throws InterruptedException {
        FairShareSemaphore<String> pool = FairShareSemaphore.<String>builder(2)
                .leakDetection(LeakDetection.RELEASE)
                .build();
        closeFairShareHandles(pool);
        assertEquals(0, pool.heldPermits("a"));
        assertTrue(pool.tryAcquire("a", 2)); // held by count: a second give-back of a closed handle would take them
        collect(20);
        assertEquals(2, pool.heldPermits("a"), pool::toString);
        assertEquals(List.of(), reports);
        pool.release("a", 2);
        assertEquals(2, pool.availablePermits());
    }

    /** Fair-share handles of key "a", granted at once and after a wait, closed, then dropped. */
    private static void closeFairShareHandles(FairShareSemaphore<String> pool) throws InterruptedException {
        for (int i = 0; i < 50; i++) {
            try (Permits p = pool.acquireBlocking("a", 1)) {
                assertFalse(p.isReleased());
            }
            pool.acquireAsync("a", 2).join().release();
            assertTrue(pool.tryAcquire("b", 2));
            CompletableFuture<Permits> queued = pool.acquireAsync("a", 1);
            pool.release("b", 2);
            queued.join().close();
        }
    }

    /** Two handles acquired at one call site and dropped. */
    private static void leakTwiceFromOneSite(Semaphore s) throws InterruptedException {
        for (int i = 0; i < 2; i++) {
            s.acquireBlocking(1);
        }
    }

    private static void leakThroughACancelledChain(Semaphore s) {
        CompletableFuture<Permits> granted = s.acquireAsync(1);
        CompletableFuture<Long> chain = granted.thenApply(Permits::permits);
        chain.cancel(true); // the grant is done; nobody will release it
    }

    @Test
    void releasedHandlesAreNotReported() throws InterruptedException {
        Semaphore s = Semaphore.builder(2).leakDetection(LeakDetection.RELEASE).build();
        for (int i = 0; i < 100; i++) {
            try (Permits p = s.acquireBlocking(1)) {
                assertFalse(p.isReleased());
            }
            s.acquireAsync(2).join().release();
            s.acquireUpToBlocking(1, 2).close();
        }
        collect(20);
        assertEquals(List.of(), reports);
        assertEquals(2, s.availablePermits());
    }

    /** The give-back a handle holds while its permits are held (its field {@code back}). */
    private static Object giveBackOf(Permits handle) throws ReflectiveOperationException {
        Class<?> type = handle instanceof HandleAcquisition ? HandleAcquisition.class : handle.getClass();
        java.lang.reflect.Field back = type.getDeclaredField("back");
        back.setAccessible(true);
        return back.get(handle);
    }

    @Test
    void offAddsNothingToAHandleOnAddsOneTrackerEach() throws Exception {
        Semaphore off = Semaphore.builder(4).leakDetection(LeakDetection.OFF).build();
        Permits a = off.acquireBlocking(1);
        Permits b = off.acquireBlocking(1);
        assertTrue(giveBackOf(a) == giveBackOf(b), "off: every handle shares the semaphore's one give-back");
        assertFalse(giveBackOf(a) instanceof PermitLeaks.Tracked);
        a.close();
        b.close();

        Semaphore on = Semaphore.builder(4).leakDetection(LeakDetection.REPORT).build();
        Permits c = on.acquireBlocking(1);
        Permits d = on.acquireBlocking(1);
        assertTrue(giveBackOf(c) instanceof PermitLeaks.Tracked);
        assertFalse(giveBackOf(c) == giveBackOf(d), "on: a tracker per handle");
        c.close();
        d.close();
        assertEquals(4, on.availablePermits());
    }

    @Test
    void offTheWriteAndFairShareHandlesAreTheUntrackedOnes() throws Exception {
        RwLock off = RwLock.builder(2).leakDetection(LeakDetection.OFF).build();
        RwLock.WritePermits w = off.writeLockBlocking();
        assertTrue(w instanceof WriteGrant, "off: the write handle is the grant itself, no wrapper");
        assertTrue(giveBackOf(((WriteGrant) w).handle) == w, "off: the core's handle gives back to the grant");
        w.close();
        RwLock on = RwLock.builder(2).leakDetection(LeakDetection.REPORT).build();
        RwLock.WritePermits x = on.writeLockBlocking();
        assertTrue(x instanceof WriteGrant.Watched, "on: a watched handle in front of the grant");
        x.close();
        assertFalse(on.isWriteLocked());

        FairShareSemaphore<String> fairOff = FairShareSemaphore.<String>builder(2)
                .leakDetection(LeakDetection.OFF)
                .build();
        Permits a = fairOff.acquireBlocking("k", 1);
        Permits b = fairOff.acquireBlocking("k", 1);
        assertTrue(giveBackOf(a) instanceof KeyState, "off: the key's state gives back, untracked");
        assertTrue(giveBackOf(a) == giveBackOf(b), "off: every handle of a key shares its give-back");
        a.close();
        b.close();
        FairShareSemaphore<String> fairOn = FairShareSemaphore.<String>builder(2)
                .leakDetection(LeakDetection.REPORT)
                .build();
        Permits c = fairOn.acquireBlocking("k", 1);
        assertTrue(giveBackOf(c) instanceof PermitLeaks.Tracked);
        c.close();
        assertEquals(2, fairOn.availablePermits());
        assertThrows(
                NullPointerException.class, () -> FairShareSemaphore.builder(1).leakDetection(null));
    }

    @Test
    void offByDefaultAndTheSystemPropertyIsChecked() {
        assertEquals(LeakDetection.OFF, LeakDetection.parse(null));
        assertEquals(LeakDetection.REPORT, LeakDetection.parse("report"));
        assertEquals(LeakDetection.RELEASE, LeakDetection.parse(" Release "));
        assertEquals(LeakDetection.OFF, LeakDetection.parse("off"));
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> LeakDetection.parse("yes"));
        assertEquals("-Ddev.handoff.leakDetection=yes: must be off, report or release", bad.getMessage());
        assertThrows(NullPointerException.class, () -> Semaphore.builder(1).leakDetection(null));
    }
}
