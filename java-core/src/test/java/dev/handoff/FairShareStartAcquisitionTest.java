// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * {@link FairShareSemaphore#startAcquisition}: an {@link Acquisition} subclass as its own waker in
 * the fair order, and the provisional grants it may ask for (held by nobody until it confirms or
 * undoes them), which the coroutine adapter uses. Counts and outcomes, no clocks.
 */
class FairShareStartAcquisitionTest {

    /** Its own waker; asks for provisional grants if told to; counts its wake-ups. */
    static final class Probe extends Acquisition {
        private final boolean provisional;
        final AtomicInteger wakes = new AtomicInteger();

        Probe(boolean provisional) {
            this.provisional = provisional;
        }

        @Override
        protected boolean provisionalGrant() {
            return provisional;
        }

        @Override
        protected void wake() {
            wakes.incrementAndGet();
        }

        void confirm() {
            confirmGrant();
        }

        boolean undo(Executor wakes) {
            return undoGrant(wakes);
        }
    }

    private static final Executor HERE = Runnable::run;

    /** Starts a thread that runs {@code release(key, n)} and keeps what it threw in {@code outcome}. */
    private static Thread releaseOnAnotherThread(
            FairShareSemaphore<String> s, String key, long n, AtomicReference<Throwable> outcome) {
        Thread releaser = new Thread(() -> {
            try {
                s.release(key, n);
            } catch (Throwable t) {
                outcome.set(t);
            }
        });
        releaser.start();
        return releaser;
    }

    @Test
    void aStartedAcquisitionWaitsInFairOrderAndIsWokenOnceGranted() {
        FairShareSemaphore<String> s = FairShareSemaphore.<String>builder(2).build();
        assertTrue(s.tryAcquire("a", 2));
        Probe p = s.startAcquisition("b", 1, new Probe(false));
        assertFalse(p.isGranted());
        assertEquals(1, s.queueLength("b"));
        assertEquals("Acquisition[permits=1, waiting]", p.toString());
        s.release("a", 1);
        assertTrue(p.isGranted());
        assertEquals(1, p.wakes.get());
        assertEquals(1, s.heldPermits("b"));
        assertEquals("Acquisition[permits=1, granted]", p.toString());
        Probe zero = s.startAcquisition("c", 0, new Probe(false));
        assertTrue(zero.isGranted(), "0 permits: granted at once");
        assertEquals(1, zero.wakes.get());
        IllegalStateException again = assertThrows(IllegalStateException.class, () -> s.startAcquisition("b", 1, p));
        assertTrue(
                again.getMessage().startsWith("startAcquisition(1): this acquisition was already started"),
                again.getMessage());
        s.release("b", 1);
        s.release("a", 1);
        assertEquals(2, s.availablePermits());
        assertEquals(0, s.activeKeys());
    }

    @Test
    void badInputIsRefusedBeforeAnythingChangesAndAShedAcquisitionMayStartAgain() {
        FairShareSemaphore<String> s = FairShareSemaphore.<String>builder(2)
                .maxPermitsPerKey(1)
                .maxQueueLength(1)
                .build();
        Probe p = new Probe(false);
        assertEquals(
                "startAcquisition(a, -1): the number of permits must not be negative",
                assertThrows(IllegalArgumentException.class, () -> s.startAcquisition("a", -1, p))
                        .getMessage());
        assertEquals(
                "startAcquisition(a, 3): exceeds the capacity 2, so it could never be granted",
                assertThrows(IllegalArgumentException.class, () -> s.startAcquisition("a", 3, p))
                        .getMessage());
        assertEquals(
                "startAcquisition(a, 2): exceeds maxPermitsPerKey 1, so it could never be granted",
                assertThrows(IllegalArgumentException.class, () -> s.startAcquisition("a", 2, p))
                        .getMessage());
        assertThrows(NullPointerException.class, () -> s.startAcquisition(null, 1, p));
        assertThrows(NullPointerException.class, () -> s.startAcquisition("a", 1, null));
        assertTrue(s.tryAcquire("x", 1));
        assertTrue(s.tryAcquire("y", 1));
        Probe first = s.startAcquisition("a", 1, new Probe(false));
        SemaphoreRejectedException shed =
                assertThrows(SemaphoreRejectedException.class, () -> s.startAcquisition("b", 1, p));
        assertTrue(
                shed.getMessage().startsWith("startAcquisition(b, 1): rejected, the wait queue is full"),
                shed.getMessage());
        assertEquals(1, s.queueLength());
        assertEquals("Acquisition[permits=0, not started]", p.toString());
        s.release("x", 1); // first is granted, the queue has room again
        assertTrue(first.isGranted());
        s.startAcquisition("b", 1, p); // the refused acquisition starts now
        assertFalse(p.isGranted());
        s.release("y", 1);
        assertTrue(p.isGranted());
        assertEquals(1, p.wakes.get());
    }

    @Test
    void cancelWithdrawsAStartedWaitAndItsPartialPermitsGoOn() {
        FairShareSemaphore<String> s = FairShareSemaphore.<String>builder(2).build();
        assertTrue(s.tryAcquire("x", 2));
        Probe heavy = s.startAcquisition("a", 2, new Probe(false));
        CompletableFuture<Permits> light = s.acquireAsync("b", 1);
        s.release("x", 1); // partially to heavy
        assertFalse(light.isDone());
        assertTrue(heavy.cancel());
        assertFalse(heavy.cancel());
        assertTrue(light.isDone(), "heavy's partial permit went on to b");
        assertEquals(0, heavy.wakes.get());
        assertEquals("Acquisition[permits=2, cancelled]", heavy.toString());
        assertEquals(0, s.heldPermits("a"));
        light.join().release();
        s.release("x", 1);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void aProvisionalGrantIsHeldByNobodyUntilConfirmedThenAWaitingReleasePasses() throws Exception {
        FairShareSemaphore<String> s = FairShareSemaphore.<String>builder(3).build();
        assertTrue(s.tryAcquire("a", 3));
        Probe p = s.startAcquisition("a", 3, new Probe(true));
        s.release("a", 3); // grants p provisionally
        assertTrue(p.isGranted());
        assertEquals(1, p.wakes.get());
        assertEquals(0, s.heldPermits("a"), "a provisional grant is held by nobody");
        assertEquals(1, s.activeKeys(), "a key with permits in transit stays active");
        assertEquals(0, s.availablePermits());
        IllegalStateException beyond = assertThrows(IllegalStateException.class, () -> s.release("a", 4));
        assertEquals(
                "release(a, 4): exceeds the 0 permits held by that key, so nothing was released", beyond.getMessage());
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        Thread releaser = releaseOnAnotherThread(s, "a", 1, outcome); // passes only if the grant is delivered
        p.confirm();
        releaser.join();
        assertNull(outcome.get(), "the grant was confirmed: the key held 3, so releasing 1 passes");
        assertEquals(2, s.heldPermits("a"));
        p.confirm(); // once only
        assertFalse(p.undo(HERE), "a confirmed grant is not undone");
        s.release("a", 2);
        assertEquals(3, s.availablePermits());
        assertEquals(0, s.activeKeys());
    }

    @Test
    void anUndoneGrantGoesOnInFairOrderAsIfNeverGrantedAndAWaitingReleaseFails() throws Exception {
        FairShareSemaphore<String> s = FairShareSemaphore.<String>builder(2).build();
        assertTrue(s.tryAcquire("a", 2));
        Probe p = s.startAcquisition("a", 2, new Probe(true));
        CompletableFuture<Permits> b = s.acquireAsync("b", 2);
        s.release("a", 2); // p first in order: granted provisionally; b still waits
        assertFalse(b.isDone());
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        Thread releaser = releaseOnAnotherThread(s, "a", 1, outcome);
        List<Runnable> later = new ArrayList<>();
        assertTrue(p.undo(later::add));
        assertFalse(p.undo(HERE), "undone once only");
        assertEquals(0, s.heldPermits("a"));
        assertEquals(2, s.heldPermits("b"), "the permits went on to b at once");
        assertEquals(1, later.size(), "b's wake-up runs on the executor given to undo");
        assertFalse(b.isDone());
        later.get(0).run();
        assertTrue(b.isDone());
        releaser.join();
        assertTrue(
                outcome.get() instanceof IllegalStateException,
                "the grant was undone: a held nothing, got " + outcome.get());
        p.confirm(); // nothing to confirm any more
        assertEquals(0, s.heldPermits("a"));
        b.join().release();
        assertEquals(2, s.availablePermits());
        assertEquals(0, s.activeKeys());
    }

    @Test
    void permitsInTransitCountAgainstTheCapAndKeepSoloModeOff() {
        FairShareSemaphore<String> s =
                FairShareSemaphore.<String>builder(4).maxPermitsPerKey(2).build();
        assertTrue(s.tryAcquire("a", 2));
        Probe p = s.startAcquisition("a", 2, new Probe(true)); // capped: waits
        s.release("a", 2); // room under the cap: p is granted provisionally
        assertTrue(p.isGranted());
        assertFalse(s.inSoloMode(), "solo mode while permits are in transit");
        assertFalse(s.tryAcquire("a", 1), "2 in transit + 1 exceeds the cap of 2");
        CompletableFuture<Permits> more = s.acquireAsync("a", 1);
        assertFalse(more.isDone(), "2 permits are free, but the cap counts the ones in transit");
        assertTrue(p.undo(HERE));
        assertTrue(more.isDone());
        assertEquals(1, s.heldPermits("a"));
        more.join().release();
        assertEquals(4, s.availablePermits());
        assertEquals(0, s.activeKeys());
    }

    @Test
    void anUndoAfterCloseStillReturnsThePermitsAndCompletesCloseAndAwait() {
        FairShareSemaphore<String> s = FairShareSemaphore.<String>builder(1).build();
        assertTrue(s.tryAcquire("a", 1));
        Probe p = s.startAcquisition("b", 1, new Probe(true));
        s.release("a", 1);
        CompletableFuture<Void> drained = s.closeAsync();
        assertFalse(drained.isDone(), "b's grant is still out (in transit)");
        assertTrue(p.undo(HERE));
        assertTrue(drained.isDone());
        assertEquals(0, s.activeKeys());
    }

    @Test
    void releaseWithAnExecutorRunsWakersThereButUnparksABlockedThreadAtOnce() throws Exception {
        FairShareSemaphore<String> s = FairShareSemaphore.<String>builder(2).build();
        assertTrue(s.tryAcquire("a", 2));
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread blocked = new Thread(() -> {
            try (Permits p = s.acquireBlocking("b", 1)) {
                assertEquals(1, s.heldPermits("b"));
            } catch (Throwable t) {
                failure.set(t);
            }
        });
        blocked.start();
        while (s.queueLength("b") == 0) {
            Thread.onSpinWait();
        }
        AtomicInteger called = new AtomicInteger();
        s.acquireThen("c", 1, called::incrementAndGet);
        assertThrows(NullPointerException.class, () -> s.release("a", 2, null));
        assertEquals(2, s.heldPermits("a"), "a refused release changes nothing");
        List<Runnable> later = new ArrayList<>();
        s.release("a", 2, later::add);
        blocked.join(60_000); // a hang guard, not a measurement: the release itself unparks it
        assertFalse(blocked.isAlive(), "the blocked thread waits for the executor, which ran nothing yet");
        assertNull(failure.get());
        assertEquals(0, called.get(), "the callback's wake-up waits for the executor");
        assertEquals(1, later.size());
        later.get(0).run();
        assertEquals(1, called.get());
        s.release("c", 1);
        assertEquals(2, s.availablePermits());
    }
}
