// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Regression tests for the second review of capacity control: an over-release racing resizes
 * (growth that pays off debt; two resizes that restore the state word bit for bit) must always be
 * refused, and a start refused by shedding must leave the node startable.
 */
@Timeout(60) // a guard against hangs, not a speed check
class ResizeRaceTest {

    private static final long RACE_NANOS = 1_500_000_000L;

    /** Races {@code release(n)} (always an over-release) against {@code resizes}; none may pass. */
    private static void overReleaseNeverPasses(Semaphore s, long n, Runnable resizes) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong accepted = new AtomicLong();
        Thread releaser = new Thread(() -> {
            while (!stop.get()) {
                try {
                    s.release(n);
                    accepted.incrementAndGet();
                    stop.set(true);
                } catch (IllegalStateException expected) {
                    // the over-release is refused, nothing changed
                }
            }
        });
        releaser.start();
        long deadline = System.nanoTime() + RACE_NANOS;
        while (!stop.get() && System.nanoTime() < deadline) {
            resizes.run();
        }
        stop.set(true);
        releaser.join();
        assertEquals(0, accepted.get(), "an over-release was accepted: " + s);
    }

    @Test
    void growthThatPaysTheDebtNeverLetsAnOverReleaseThrough() throws Exception {
        Semaphore s = new Semaphore(20);
        assertTrue(s.tryAcquire(10));
        overReleaseNeverPasses(s, 11, () -> {
            s.setCapacity(5); // debt 5
            s.setCapacity(20); // pays the debt, 10 free again
        });
        s.release(10);
        assertEquals(20, s.availablePermits());
    }

    @Test
    void resizesThatRestoreTheWordNeverLetAnOverReleaseThrough() throws Exception {
        Semaphore s = new Semaphore(2);
        overReleaseNeverPasses(s, 1, () -> {
            s.setCapacity(3);
            s.setCapacity(2);
        });
        assertEquals(2, s.availablePermits());
    }

    @Test
    void aValidReleaseIsNeverRefusedWhileResizesRun() throws Exception {
        Semaphore s = new Semaphore(4);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong refused = new AtomicLong();
        Thread holder = new Thread(() -> {
            while (!stop.get()) {
                if (s.tryAcquire(1)) {
                    try {
                        s.release(1);
                    } catch (IllegalStateException wronglyRefused) {
                        refused.incrementAndGet();
                        stop.set(true);
                    }
                }
            }
        });
        holder.start();
        long deadline = System.nanoTime() + RACE_NANOS;
        while (!stop.get() && System.nanoTime() < deadline) {
            s.setCapacity(3);
            s.setCapacity(4);
        }
        stop.set(true);
        holder.join();
        assertEquals(0, refused.get(), "a release of a held permit was refused: " + s);
        assertEquals(4, s.availablePermits());
    }

    @Test
    void aStartRefusedBySheddingLeavesTheNodeStartable() {
        Semaphore s = Semaphore.builder(1).maxQueueLength(0).build();
        assertTrue(s.tryAcquire(1));
        Acquisition a = new Acquisition() {
            @Override
            protected void wake() {}
        };
        assertThrows(SemaphoreRejectedException.class, () -> s.startAcquisition(1, a));
        assertEquals(0, a.permits(), "nothing changed");
        s.release(1);
        s.startAcquisition(1, a);
        assertTrue(a.isGranted());
        s.release(1);
        assertThrows(IllegalStateException.class, () -> s.startAcquisition(1, a), "a started node stays started");
    }
}
