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
