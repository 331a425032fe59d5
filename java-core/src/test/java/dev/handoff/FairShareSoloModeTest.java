// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Solo mode of {@link FairShareSemaphore}: while one key is at work and nothing waits, its grants
 * at once and its releases are one CAS of the core's word and never take the front's lock; leaving
 * the mode (another key, a wait, a resize, a close) accounts for every permit. Counts, no clocks:
 * the front lock's stamp (one more at every lock and unlock) shows whether anything took it.
 */
class FairShareSoloModeTest {

    @Test
    void oneKeyAtWorkTakesAndReturnsWithoutTheLock() throws Exception {
        FairShareSemaphore<String> s =
                FairShareSemaphore.<String>builder(8).maxPermitsPerKey(6).build();
        assertTrue(s.tryAcquire("a", 1)); // the first grant activates the key, under the lock
        s.release("a", 1);
        assertTrue(s.inSoloMode());
        int before = s.sectionStamp();
        for (int i = 0; i < 10_000; i++) {
            assertTrue(s.tryAcquire("a", 2));
            assertEquals(2, s.heldPermits("a"));
            try (Permits p = s.acquireBlocking("a", 3)) { // the blocking face's grant at once too
                assertEquals(5, s.heldPermits("a"));
                assertFalse(s.tryAcquire("a", 2), "the cap of 6 holds in solo mode");
                assertEquals(1, s.activeKeys());
            }
            s.release("a", 2);
            assertEquals(0, s.activeKeys());
        }
        assertEquals(before, s.sectionStamp(), "a solo operation took the front's lock");
        IllegalStateException over = assertThrows(IllegalStateException.class, () -> s.release("a", 1));
        assertEquals(
                "release(a, 1): exceeds the 0 permits held by that key, so nothing was released", over.getMessage());
        assertEquals(8, s.availablePermits());
        assertEquals(before, s.sectionStamp(), "a refused solo release took the front's lock");
    }

    @Test
    void leavingSoloModeCountsEveryPermitOfTheSoloKey() {
        FairShareSemaphore<String> s = FairShareSemaphore.<String>builder(10).build();
        assertTrue(s.tryAcquire("a", 1));
        assertTrue(s.inSoloMode());
        assertTrue(s.tryAcquire("a", 3)); // solo: the key's field says 1, the word says 4
        assertTrue(s.tryAcquire("b", 2)); // a section: solo mode ends, a holds 4
        assertFalse(s.inSoloMode());
        assertEquals(4, s.heldPermits("a"));
        assertEquals(2, s.heldPermits("b"));
        assertThrows(IllegalStateException.class, () -> s.release("a", 5));
        s.release("a", 4);
        assertEquals(0, s.heldPermits("a"));
        assertEquals(1, s.activeKeys());
        List<String> grants = new ArrayList<>();
        assertTrue(s.tryAcquire("b", 8)); // b is the only key: solo again
        assertTrue(s.inSoloMode());
        Acquisition w = s.acquireThen("c", 3, () -> grants.add("c"));
        assertFalse(w.isGranted()); // a wait: solo mode ends, and stays off while c waits
        assertFalse(s.inSoloMode());
        s.release("b", 3); // under the lock: c is granted
        assertEquals(List.of("c"), grants);
        assertEquals(7, s.heldPermits("b"));
        assertEquals(3, s.heldPermits("c"));
        assertEquals(0, s.availablePermits());
    }

    @Test
    void aSoloKeyThatBecomesActiveAgainReadsItsShareAgain() {
        AtomicLong share = new AtomicLong(1);
        AtomicLong reads = new AtomicLong();
        FairShareSemaphore<String> s = FairShareSemaphore.<String>builder(4)
                .share(k -> {
                    reads.incrementAndGet();
                    return k.equals("a") ? share.get() : 1;
                })
                .build();
        assertTrue(s.tryAcquire("a", 1));
        s.release("a", 1);
        long afterFirst = reads.get();
        assertTrue(s.tryAcquire("a", 1)); // idle solo key, active again: the share is read
        assertTrue(reads.get() > afterFirst, "becoming active again did not read the share");
        assertTrue(s.tryAcquire("a", 1)); // still active: not read
        long whileActive = reads.get();
        s.release("a", 2);
        share.set(4); // the next activation must use 4
        assertTrue(s.tryAcquire("a", 4));
        assertTrue(reads.get() > whileActive);
        // a now has share 4: while a and b both wait, a gets 4 grants of 1 for each of b's.
        List<String> grants = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            s.acquireThen("a", 1, () -> grants.add("a"));
        }
        for (int i = 0; i < 2; i++) {
            s.acquireThen("b", 1, () -> grants.add("b"));
        }
        for (int i = 0; i < 10; i++) { // one permit back at a time: a's first 4, then the granted ones'
            s.release(i < 4 ? "a" : grants.get(i - 4), 1);
        }
        assertEquals(10, grants.size(), grants::toString);
        assertEquals(List.of("a", "b", "a", "a", "a", "a", "b", "a", "a", "a"), grants);
    }

    @Test
    void resizeAndCloseLeaveSoloModeWithTheRightCounts() throws Exception {
        FairShareSemaphore<String> s = FairShareSemaphore.<String>builder(6).build();
        assertTrue(s.tryAcquire("a", 1));
        assertTrue(s.tryAcquire("a", 4));
        s.setCapacity(3); // a holds 5 of 3: a debt of 2
        assertEquals(5, s.heldPermits("a"));
        assertEquals(0, s.availablePermits());
        s.release("a", 3); // pays the debt, 1 free
        assertEquals(1, s.availablePermits());
        assertTrue(s.tryAcquire("a", 1));
        assertTrue(s.inSoloMode(), "no debt owed: solo again");
        assertTrue(s.tryAcquire("a", 0));
        var drained = s.closeAsync();
        assertFalse(s.inSoloMode());
        assertFalse(drained.isDone());
        assertEquals(3, s.heldPermits("a"));
        s.release("a", 3);
        assertTrue(drained.isDone());
    }

    /**
     * Two threads take and return the same key in solo mode while a third keeps ending it (another
     * key, a wait, a resize back and forth). Every round's total must come back: nothing lost or
     * created, and each thread's over-release check stays exact.
     */
    @Test
    void soloOperationsRacingSectionsLoseAndCreateNothing() throws Exception {
        FairShareSemaphore<String> s = FairShareSemaphore.<String>builder(4).build();
        int rounds = 20_000;
        CyclicBarrier start = new CyclicBarrier(3);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Runnable solo = () -> {
            try {
                start.await();
                for (int i = 0; i < rounds; i++) {
                    if (s.tryAcquire("a", 1)) {
                        assertTrue(s.heldPermits("a") >= 1);
                        s.release("a", 1);
                    }
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        };
        Thread t1 = new Thread(solo);
        Thread t2 = new Thread(solo);
        t1.start();
        t2.start();
        start.await();
        for (int i = 0; i < rounds / 10; i++) {
            switch (i % 3) {
                case 0:
                    if (s.tryAcquire("b", 1)) {
                        s.release("b", 1);
                    }
                    break;
                case 1:
                    s.addCapacity(1);
                    s.addCapacity(-1);
                    break;
                default:
                    try (Permits p = s.acquireBlocking("a", 2)) {
                        assertTrue(s.heldPermits("a") >= 2);
                    }
                    break;
            }
        }
        t1.join();
        t2.join();
        if (failure.get() != null) {
            throw new AssertionError(failure.get());
        }
        assertEquals(0, s.heldPermits("a"));
        assertEquals(0, s.heldPermits("b"));
        assertEquals(4, s.availablePermits());
        assertEquals(0, s.activeKeys());
        assertThrows(IllegalStateException.class, () -> s.release("a", 1));
    }
}
