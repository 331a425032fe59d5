// SPDX-License-Identifier: Apache-2.0
package dev.handoff.edge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Semaphore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class AdmissionControlTest {

    static final long WAIT = 10; // seconds a test waits for a future that must complete

    static Decision get(CompletableFuture<Decision> f) throws Exception {
        return f.get(WAIT, TimeUnit.SECONDS);
    }

    static Admission admitted(Decision d) {
        assertTrue(d.isAdmitted(), d.toString());
        Admission a = d.admission();
        assertNotNull(a);
        assertNull(d.shedReason());
        return a;
    }

    static void assertShed(ShedReason reason, Decision d) {
        assertFalse(d.isAdmitted(), d.toString());
        assertNull(d.admission());
        assertEquals(reason, d.shedReason());
    }

    /** Releases each of {@code decisions} once it is admitted, in whatever order they are granted. */
    static void releaseAsGranted(List<CompletableFuture<Decision>> decisions) throws Exception {
        List<CompletableFuture<Decision>> pending = new ArrayList<>(decisions);
        while (!pending.isEmpty()) {
            CompletableFuture<Decision> next = pending.stream()
                    .filter(CompletableFuture::isDone)
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("nothing granted while permits are free"));
            pending.remove(next);
            admitted(get(next)).release();
        }
    }

    @Test
    void admitsWithinCapacityAndReleasesBack() throws Exception {
        Semaphore s = new Semaphore(3);
        AdmissionControl<String> gate =
                AdmissionControl.<String>builder().limiter(s).build();
        List<Admission> held = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            held.add(admitted(i % 2 == 0 ? gate.tryAdmit("r" + i) : get(gate.admitAsync("r" + i))));
        }
        assertEquals(0, s.availablePermits());
        assertShed(ShedReason.QUEUE_FULL, gate.tryAdmit("r3"));
        assertEquals(1, gate.shedCount(ShedReason.QUEUE_FULL));
        for (Admission a : held) {
            assertTrue(a.release());
            assertTrue(a.isReleased());
        }
        assertEquals(3, s.availablePermits());
        assertSame(s, gate.primitive());
    }

    @Test
    void costFunctionWeighsEachRequest() throws Exception {
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .capacity(5)
                .cost(String::length)
                .build();
        Semaphore s = (Semaphore) gate.primitive();
        Admission three = admitted(gate.tryAdmit("aaa"));
        assertEquals(3, three.cost());
        Admission two = admitted(get(gate.admitAsync("bb")));
        assertEquals(2, two.cost());
        assertEquals(0, s.availablePermits());
        assertShed(ShedReason.QUEUE_FULL, gate.tryAdmit("c"));
        three.close();
        assertEquals(3, s.availablePermits());
        two.release();
        assertEquals(5, s.availablePermits());
    }

    @Test
    void costBelowOneIsAProgrammingError() {
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .capacity(5)
                .cost(r -> r.isEmpty() ? 0 : -1)
                .build();
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> gate.tryAdmit(""));
        assertEquals(
                "tryAdmit(): the cost function returned 0; a request's cost must be at least 1", zero.getMessage());
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class, () -> gate.admitAsync("x"));
        assertTrue(negative.getMessage().contains("admitAsync(x): the cost function returned -1"));
        assertEquals(5, ((Semaphore) gate.primitive()).availablePermits());
    }

    @Test
    void costAboveCapacityIsShedAndTakesNothing() throws Exception {
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .capacity(3)
                .cost(String::length)
                .build();
        Semaphore s = (Semaphore) gate.primitive();
        Admission one = admitted(gate.tryAdmit("a"));
        assertShed(ShedReason.COST_TOO_HIGH, gate.tryAdmit("aaaa"));
        assertShed(ShedReason.COST_TOO_HIGH, get(gate.admitAsync("aaaa")));
        assertEquals(2, gate.shedCount(ShedReason.COST_TOO_HIGH));
        assertEquals(2, s.availablePermits());
        assertEquals(0, s.queueLength());
        one.release();
        assertEquals(3, s.availablePermits());
    }

    @Test
    void fullQueueIsShedAtOnce() throws Exception {
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .capacity(1)
                .maxQueueLength(1)
                .maxWait(Duration.ofSeconds(WAIT * 3))
                .retryAfter(Duration.ofMillis(1500))
                .build();
        Semaphore s = (Semaphore) gate.primitive();
        Admission holder = admitted(gate.tryAdmit("a"));
        CompletableFuture<Decision> queued = gate.admitAsync("b");
        assertFalse(queued.isDone());
        CompletableFuture<Decision> third = gate.admitAsync("c");
        assertTrue(third.isDone(), "a full queue answers at once");
        Decision shed = get(third);
        assertShed(ShedReason.QUEUE_FULL, shed);
        assertEquals(Duration.ofMillis(1500), shed.retryAfter());
        assertEquals(2, shed.retryAfterSeconds());
        assertEquals(1, s.queueLength());
        assertEquals(0, s.availablePermits());

        holder.release();
        Admission b = admitted(get(queued));
        assertEquals(0, s.queueLength());
        b.release();
        assertEquals(1, s.availablePermits());
        assertEquals(1, gate.shedCount(ShedReason.QUEUE_FULL));
    }

    @Test
    void waitLongerThanMaxWaitIsShedAndWithdrawn() throws Exception {
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .capacity(2)
                .maxWait(Duration.ofMillis(50))
                .build();
        Semaphore s = (Semaphore) gate.primitive();
        Admission holder = admitted(gate.tryAdmit("a"));
        Admission holder2 = admitted(gate.tryAdmit("b"));
        CompletableFuture<Decision> late = gate.admitAsync("c");
        assertShed(ShedReason.TIMED_OUT, get(late));
        assertEquals(0, s.queueLength(), "the timed-out wait is withdrawn");
        assertEquals(0, s.availablePermits());
        assertEquals(1, gate.shedCount(ShedReason.TIMED_OUT));
        holder.release();
        holder2.release();
        assertEquals(2, s.availablePermits());
    }

    @Test
    void zeroMaxWaitNeverQueues() throws Exception {
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .capacity(1)
                .maxWait(Duration.ZERO)
                .build();
        Admission a = admitted(get(gate.admitAsync("a")));
        CompletableFuture<Decision> second = gate.admitAsync("b");
        assertTrue(second.isDone());
        assertShed(ShedReason.QUEUE_FULL, get(second));
        assertEquals(0, gate.primitive().queueLength());
        a.release();
    }

    @Test
    void closedLimitShedsWaitingAndNewRequests() throws Exception {
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .capacity(1)
                .maxWait(Duration.ofSeconds(WAIT * 3))
                .build();
        Semaphore s = (Semaphore) gate.primitive();
        Admission holder = admitted(gate.tryAdmit("a"));
        CompletableFuture<Decision> waiting = gate.admitAsync("b");
        CompletableFuture<Void> drained = gate.closeAsync();
        assertShed(ShedReason.CLOSED, get(waiting));
        assertShed(ShedReason.CLOSED, gate.tryAdmit("c"));
        assertShed(ShedReason.CLOSED, get(gate.admitAsync("d")));
        assertEquals(3, gate.shedCount(ShedReason.CLOSED));
        assertFalse(drained.isDone(), "an admitted request still holds its permit");
        assertTrue(holder.release());
        drained.get(WAIT, TimeUnit.SECONDS);
        assertEquals(1, s.availablePermits());
        assertEquals(0, s.queueLength());
    }

    @Test
    void cancellingAQueuedDecisionWithdrawsTheWait() throws Exception {
        Semaphore s = new Semaphore(1);
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .limiter(s)
                .maxWait(Duration.ofSeconds(WAIT * 3))
                .build();
        Admission holder = admitted(gate.tryAdmit("a"));
        CompletableFuture<Decision> queued = gate.admitAsync("b");
        assertEquals(1, s.queueLength());
        assertTrue(queued.cancel(true));
        assertEquals(0, s.queueLength());
        assertEquals(0, s.queuedPermits());
        holder.release();
        assertEquals(1, s.availablePermits());
        for (ShedReason r : ShedReason.values()) {
            assertEquals(0, gate.shedCount(r), r.name());
        }
    }

    @Test
    void blockingAdmissionWaitsAndAnInterruptWithdraws() throws Exception {
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .capacity(1)
                .maxWait(Duration.ofSeconds(WAIT * 3))
                .build();
        Semaphore s = (Semaphore) gate.primitive();
        Admission holder = admitted(gate.admitBlocking("a"));
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            try {
                outcome.complete(new AssertionError("admitted: " + gate.admitBlocking("b")));
            } catch (Throwable t) {
                outcome.complete(t);
            }
        });
        waiter.start();
        while (s.queueLength() == 0) {
            Thread.onSpinWait();
        }
        waiter.interrupt();
        assertTrue(outcome.get(WAIT, TimeUnit.SECONDS) instanceof InterruptedException);
        waiter.join();
        assertEquals(0, s.queueLength());
        holder.release();
        assertEquals(1, s.availablePermits());
    }

    @Test
    void aFloodingKeyWaitsBehindItselfWhileAnotherKeyGoesFirst() throws Exception {
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .capacity(2)
                .key(r -> r.substring(0, 1), k -> 1)
                .maxWait(Duration.ofSeconds(WAIT * 3))
                .name("api")
                .build();
        @SuppressWarnings("unchecked")
        FairShareSemaphore<String> fs = (FairShareSemaphore<String>) gate.primitive();
        assertEquals("api", fs.name());
        Admission a1 = admitted(gate.tryAdmit("A1"));
        Admission a2 = admitted(gate.tryAdmit("A2"));
        List<CompletableFuture<Decision>> backlog = new ArrayList<>();
        for (int i = 3; i <= 7; i++) {
            backlog.add(gate.admitAsync("A" + i));
        }
        CompletableFuture<Decision> b = gate.admitAsync("B1");
        assertEquals(6, fs.queueLength());
        assertFalse(b.isDone());

        // B is served after at most the A request already first in line, not after A's backlog
        a1.release();
        a2.release();
        assertTrue(b.isDone(), "key B goes ahead of key A's backlog");
        Admission b1 = admitted(get(b));
        long backlogServed = backlog.stream().filter(CompletableFuture::isDone).count();
        assertEquals(1, backlogServed, "one of A's backlog, then B, then the rest of A's");
        assertTrue(backlog.get(0).isDone(), "A's requests keep their order");
        b1.release();
        releaseAsGranted(backlog);
        assertEquals(2, fs.availablePermits());
        assertEquals(0, fs.queueLength());
    }

    @Test
    void perKeyQueueBoundShedsOnlyTheFloodingKey() throws Exception {
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .capacity(1)
                .key(r -> r.substring(0, 1), k -> 1)
                .maxQueuedPermitsPerKey(1)
                .maxWait(Duration.ofSeconds(WAIT * 3))
                .build();
        Admission a1 = admitted(gate.tryAdmit("A1"));
        CompletableFuture<Decision> a2 = gate.admitAsync("A2");
        assertShed(ShedReason.QUEUE_FULL, get(gate.admitAsync("A3")));
        CompletableFuture<Decision> b1 = gate.admitAsync("B1");
        assertFalse(b1.isDone(), "another key still queues");
        a1.release();
        releaseAsGranted(List.of(a2, b1));
        assertEquals(0, gate.primitive().queueLength());
    }

    @Test
    void perKeyCapMakesAHeavierRequestTooCostly() throws Exception {
        FairShareSemaphore<String> fs =
                FairShareSemaphore.<String>builder(10).maxPermitsPerKey(3).build();
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .limiter(r -> r.substring(0, 1), fs)
                .cost(String::length)
                .build();
        assertShed(ShedReason.COST_TOO_HIGH, get(gate.admitAsync("AAAA")));
        Admission a = admitted(get(gate.admitAsync("AAA")));
        assertEquals(3, fs.heldPermits("A"));
        a.release();
        assertEquals(10, fs.availablePermits());
    }
}
