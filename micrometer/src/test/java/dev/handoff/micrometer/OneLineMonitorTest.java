// SPDX-License-Identifier: Apache-2.0
package dev.handoff.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Mutex;
import dev.handoff.Permits;
import dev.handoff.PrimitiveView;
import dev.handoff.RwLock;
import dev.handoff.Semaphore;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** {@code SemaphoreMetrics.monitor(registry, builder)}: the whole wiring in one call. */
class OneLineMonitorTest {

    @Test
    void aSemaphoreGetsItsGaugesAndItsWaitsTimed() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Semaphore uploads =
                SemaphoreMetrics.monitor(registry, Semaphore.builder(4).name("uploads"));
        assertEquals(
                4.0,
                registry.get("handoff.semaphore.capacity")
                        .tag("name", "uploads")
                        .gauge()
                        .value());
        assertTrue(uploads.tryAcquire(4));
        CompletableFuture<Permits> waiting = uploads.acquireAsync(1);
        uploads.release(4);
        waiting.join().release();
        assertEquals(
                1,
                registry.get("handoff.semaphore.wait")
                        .tags("name", "uploads", "outcome", "granted")
                        .timer()
                        .count());
        assertEquals(
                4.0,
                registry.get("handoff.semaphore.available")
                        .tag("name", "uploads")
                        .gauge()
                        .value());
    }

    @Test
    void aMutexAndALockToo() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Mutex journal = SemaphoreMetrics.monitor(registry, Mutex.builder().name("journal"));
        assertTrue(journal.tryLock());
        assertEquals(
                1.0,
                registry.get("handoff.mutex.locked")
                        .tag("name", "journal")
                        .gauge()
                        .value());
        journal.unlock();
        RwLock index = SemaphoreMetrics.monitor(registry, RwLock.builder(8).name("index"));
        assertTrue(index.tryReadLock());
        assertEquals(
                1.0,
                registry.get("handoff.rwlock.read.locks")
                        .tag("name", "index")
                        .gauge()
                        .value());
        index.readUnlock();
    }

    @Test
    void anyPrimitiveAlreadyBuiltGetsTheGaugesOfItsKindInOneCall() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        FairShareSemaphore<String> tenants =
                FairShareSemaphore.<String>builder(4).name("tenants").build();
        Mutex journal = Mutex.builder().name("journal").build();
        SemaphoreMetrics.monitor(registry, tenants);
        SemaphoreMetrics.monitor(registry, (PrimitiveView) journal);
        Permits held = tenants.acquireBlocking("a", 4);
        CompletableFuture<Permits> waiting = tenants.acquireAsync("b", 3);
        assertEquals(
                1.0,
                registry.get("handoff.semaphore.queue.length")
                        .tag("name", "tenants")
                        .gauge()
                        .value());
        assertEquals(
                3.0,
                registry.get("handoff.semaphore.queue.permits")
                        .tag("name", "tenants")
                        .gauge()
                        .value());
        assertEquals(
                4.0,
                registry.get("handoff.semaphore.capacity")
                        .tag("name", "tenants")
                        .gauge()
                        .value());
        held.release();
        waiting.join().release();
        assertEquals(
                0.0,
                registry.get("handoff.semaphore.queue.length")
                        .tag("name", "tenants")
                        .gauge()
                        .value());
        assertTrue(journal.tryLock());
        assertEquals(
                1.0,
                registry.get("handoff.mutex.locked")
                        .tag("name", "journal")
                        .gauge()
                        .value());
        journal.unlock();
        // Gauges only: it is not the primitive's listener, so no wait timer is registered empty.
        assertTrue(registry.find("handoff.semaphore.wait").timers().isEmpty());
        assertThrows(
                IllegalArgumentException.class,
                () -> SemaphoreMetrics.monitor(
                        registry, FairShareSemaphore.<String>builder(1).build()));
    }

    @Test
    void anUnnamedPrimitiveOrANullArgumentIsRefusedAndNothingIsRegistered() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        IllegalArgumentException unnamed = assertThrows(
                IllegalArgumentException.class, () -> SemaphoreMetrics.monitor(registry, Semaphore.builder(4)));
        assertTrue(unnamed.getMessage().contains("name"), unnamed.getMessage());
        assertThrows(
                NullPointerException.class,
                () -> SemaphoreMetrics.monitor(null, Mutex.builder().name("m")));
        assertThrows(NullPointerException.class, () -> SemaphoreMetrics.monitor(registry, (RwLock.Builder) null));
        assertThrows(NullPointerException.class, () -> SemaphoreMetrics.monitor(registry, (PrimitiveView) null));
        assertEquals(0, registry.getMeters().size());
    }
}
