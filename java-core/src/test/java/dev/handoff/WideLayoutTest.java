// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Capacities above 2^40 - 1 (a terabyte counted in bytes), where the state word keeps the free
 * count in the bits a smaller semaphore uses for its resize stamp: free permits of 2^40 and more
 * are drained into a waiter, given back and counted at close like any others, and never kept as if
 * they were a stamp (which would create permits).
 */
class WideLayoutTest {

    private static final long MAX = Semaphore.MAX_PERMITS;
    private static final long TERA = 1L << 40;

    @Test
    void freePermitsOfTwoToTheFortyAndMoreGoToTheWaiterThatQueues() {
        Semaphore s = new Semaphore(MAX);
        assertTrue(s.tryAcquire(MAX));
        s.release(TERA);
        assertEquals(TERA, s.availablePermits());
        Acquisition big = s.acquireThen(MAX, () -> {}); // takes the TERA free as a partial assignment
        assertEquals(0, s.availablePermits(), "nothing is free while an acquisition waits");
        Acquisition small = s.acquireThen(5, () -> {});
        assertFalse(small.isGranted());
        assertTrue(big.cancel()); // its partial assignment goes on to the next waiter, the rest is free
        assertTrue(small.isGranted());
        assertEquals(TERA - 5, s.availablePermits(), "no permit created");
        assertThrows(IllegalStateException.class, () -> s.release(MAX - TERA + 6), "one more than is held");
        s.release(MAX - TERA + 5);
        assertEquals(MAX, s.availablePermits());
        assertTrue(s.tryAcquire(MAX));
        assertFalse(s.tryAcquire(1));
    }

    @Test
    void aReleaseThatEmptiesTheQueueLeavesExactlyTheRestFree() {
        Semaphore s = new Semaphore(MAX);
        assertTrue(s.tryAcquire(MAX));
        s.release(3 * TERA + 7); // free: bits above the compact count's 40
        Acquisition waiter = s.acquireThen(4 * TERA, () -> {});
        assertEquals(0, s.availablePermits());
        s.release(5 * TERA); // serves the waiter (it had 3 TERA + 7), the rest is free
        assertTrue(waiter.isGranted());
        assertEquals(4 * TERA + 7, s.availablePermits());
        s.release(4 * TERA); // what the waiter holds
        assertEquals(8 * TERA + 7, s.availablePermits());
        s.release(MAX - 8 * TERA - 7);
        assertEquals(MAX, s.availablePermits());
        assertThrows(IllegalStateException.class, () -> s.release(1));
    }

    @Test
    void closeCountsAWaitersPartialAssignmentBackExactly() throws Exception {
        Semaphore s = new Semaphore(MAX);
        assertTrue(s.tryAcquire(MAX));
        s.release(TERA + 1);
        CompletableFuture<Permits> waiting = s.acquireAsync(2 * TERA);
        assertEquals(0, s.availablePermits());
        s.close();
        assertTrue(waiting.isCompletedExceptionally());
        assertEquals(TERA + 1, s.availablePermits(), "the partial assignment is free again, nothing more");
        s.release(MAX - TERA - 1);
        assertEquals(MAX, s.availablePermits());
        assertThrows(IllegalStateException.class, () -> s.release(1));
    }

    @Test
    void aSemaphoreThatGrowsIntoTheWideLayoutKeepsItsCount() {
        Semaphore s = new Semaphore(TERA - 1);
        assertTrue(s.tryAcquire(TERA - 1));
        s.setCapacity(4 * TERA); // 3 TERA + 1 free, in the wide layout now
        assertEquals(3 * TERA + 1, s.availablePermits());
        Acquisition waiter = s.acquireThen(4 * TERA, () -> {});
        assertEquals(0, s.availablePermits());
        assertTrue(waiter.cancel());
        assertEquals(3 * TERA + 1, s.availablePermits());
        s.release(TERA - 1);
        assertEquals(4 * TERA, s.availablePermits());
        assertThrows(IllegalStateException.class, () -> s.release(1));
    }
}
