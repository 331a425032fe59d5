// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Small contract points: a zero-permit handle of the fair share reads as held until released; the
 * fair share's messages name the key; arguments are checked in one order on every face; a cancel
 * that races the start of its own subclass node never answers false while the node goes on to
 * wait.
 */
@Timeout(value = 10, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a hang fails, not a speed check
class SmallContractDefectsTest {

    @Test
    void aZeroPermitFairShareHandleIsHeldUntilReleased() throws Exception {
        FairShareSemaphore<String> f = FairShareSemaphore.<String>builder(2).build();
        Permits idle = f.acquireBlocking("a", 0); // granted at once
        assertTrue(f.tryAcquire("b", 2));
        java.util.concurrent.CompletableFuture<Permits> waiting = f.acquireAsync("c", 1); // zero permits now queue
        Permits blocking = f.acquireBlocking("a", 0);
        Permits async = f.acquireAsync("a", 0).get(0, TimeUnit.SECONDS);
        f.release("b", 2);
        waiting.get(0, TimeUnit.SECONDS).close();
        for (Permits p : new Permits[] {idle, blocking, async}) {
            assertEquals("Permits[0, held]", p.toString());
            assertFalse(p.isReleased());
            assertTrue(p.release());
            assertFalse(p.release());
            assertEquals("Permits[0, released]", p.toString());
        }
        assertEquals(2, f.availablePermits());
        Semaphore s = new Semaphore(2); // as the core's own zero-permit handle reads
        assertEquals("Permits[0, held]", s.acquireBlocking(0).toString());
    }

    @Test
    void theFairSharesNegativeCountMessageNamesTheKey() {
        FairShareSemaphore<String> f = FairShareSemaphore.<String>builder(2).build();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> f.tryAcquire("tenant-7", -1));
        assertEquals("tryAcquire(tenant-7, -1): the number of permits must not be negative", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> f.release("tenant-7", -2));
        assertTrue(e.getMessage().startsWith("release(tenant-7, -2): "), e.getMessage());
    }

    @Test
    void aNullTimeoutIsReportedBeforeAnOversizeCountOnEveryFace() {
        Semaphore s = new Semaphore(2);
        FairShareSemaphore<String> f = FairShareSemaphore.<String>builder(2).build();
        assertThrows(NullPointerException.class, () -> s.tryAcquireBlocking(3, null));
        assertThrows(NullPointerException.class, () -> f.tryAcquireBlocking("a", 3, null));
        assertThrows(IllegalArgumentException.class, () -> s.tryAcquireBlocking(-1, null));
        assertThrows(IllegalArgumentException.class, () -> f.tryAcquireBlocking("a", -1, null));
    }

    @Test
    void aNullBodyIsReportedBeforeAnOversizeCountOnEveryScopedCall() {
        Semaphore s = new Semaphore(2);
        FairShareSemaphore<String> f = FairShareSemaphore.<String>builder(2).build();
        assertThrows(NullPointerException.class, () -> s.withPermitsAsync(3, null));
        assertThrows(NullPointerException.class, () -> s.withPermitsBlocking(3, null));
        assertThrows(NullPointerException.class, () -> f.withPermitsAsync("a", 3, null));
        assertThrows(NullPointerException.class, () -> f.withPermitsBlocking("a", 3, null));
        assertThrows(IllegalArgumentException.class, () -> f.withPermitsAsync("a", -1, null));
        assertThrows(IllegalArgumentException.class, () -> f.withPermitsBlocking("a", -1, null));
        assertEquals(2, f.availablePermits());
    }

    @Test
    void aCancelRacingItsNodesStartWithdrawsIt() throws Exception {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        StoppingAcquisition node = new StoppingAcquisition("enqueue"); // stops before it is queued
        Thread starter = new Thread(() -> s.startAcquisition(1, node), "starter");
        starter.start();
        node.reached.await(); // bound to s, not queued yet

        boolean[] cancelled = new boolean[1];
        Thread canceller = new Thread(() -> cancelled[0] = node.cancel(), "canceller");
        canceller.start();
        // Let the start go on once the cancel is either over or waiting for it.
        while (canceller.isAlive() && canceller.getState() != Thread.State.TIMED_WAITING) {
            Thread.onSpinWait();
        }
        node.go.countDown();
        starter.join();
        canceller.join();

        assertTrue(cancelled[0], "cancel of a waiting acquisition answered false: " + s);
        assertFalse(node.isGranted());
        assertEquals(0, s.queueLength(), s.toString());
        s.release(1);
        assertEquals(1, s.availablePermits(), s.toString());
        assertEquals(0, node.wakes.get());
    }
}
