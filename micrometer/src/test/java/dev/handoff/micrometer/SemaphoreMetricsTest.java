// SPDX-License-Identifier: Apache-2.0
package dev.handoff.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Acquisition;
import dev.handoff.Mutex;
import dev.handoff.Permits;
import dev.handoff.RwLock;
import dev.handoff.Semaphore;
import dev.handoff.SemaphoreClosedException;
import dev.handoff.SemaphoreRejectedException;
import dev.handoff.WaitListener;
import dev.handoff.WaitOutcome;
import dev.handoff.Waker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The meters after real acquisitions: every gauge, a timer and a summary per outcome from real
 * waits, the rejected counter from real load shedding, tags, renaming, base unit, the wiring and
 * its misuse.
 */
@Timeout(120) // a hang fails the test instead of holding the build
class SemaphoreMetricsTest {

    private final MeterRegistry registry = new SimpleMeterRegistry();

    private static final Waker NO_OP = new Waker() {
        @Override
        public void wake() {}
    };

    private double gauge(String name) {
        Gauge g = registry.find(name).tag("name", "test").gauge();
        assertNotNull(g, "no gauge " + name + " in " + registry.getMeters());
        return g.value();
    }

    private Timer timer(String prefix, WaitOutcome outcome) {
        return timer(prefix, "test", outcome);
    }

    private Timer timer(String prefix, String name, WaitOutcome outcome) {
        Timer t = registry.find(prefix + ".wait")
                .tag("name", name)
                .tag("outcome", SemaphoreMetrics.outcomeTag(outcome))
                .timer();
        assertNotNull(t, "no timer " + prefix + ".wait " + name + " " + outcome);
        return t;
    }

    private Timer timer(WaitOutcome outcome) {
        return timer("handoff.semaphore", outcome);
    }

    private DistributionSummary weights(WaitOutcome outcome) {
        DistributionSummary d = registry.find("handoff.semaphore.wait.permits")
                .tag("name", "test")
                .tag("outcome", SemaphoreMetrics.outcomeTag(outcome))
                .summary();
        assertNotNull(d, "no summary for " + outcome);
        return d;
    }

    private Counter rejected() {
        Counter c =
                registry.find("handoff.semaphore.rejected").tag("name", "test").counter();
        assertNotNull(c);
        return c;
    }

    /** The count of each outcome's timer, in outcome order. */
    private List<Long> waitCounts() {
        return List.of(
                timer(WaitOutcome.GRANTED).count(),
                timer(WaitOutcome.CANCELLED).count(),
                timer(WaitOutcome.TIMED_OUT).count(),
                timer(WaitOutcome.CLOSED).count(),
                timer(WaitOutcome.FAILED).count());
    }

    private Semaphore monitored(long capacity) {
        SemaphoreMetrics metrics = SemaphoreMetrics.of("test");
        Semaphore s = Semaphore.builder(capacity).listener(metrics).build();
        metrics.monitor(s).bindTo(registry);
        return s;
    }

    // ------------------------------------------------------------------ gauges

    @Test
    void gaugesReadTheSemaphore() throws Exception {
        Semaphore s = monitored(10);
        assertEquals(10.0, gauge("handoff.semaphore.capacity"));
        assertEquals(10.0, gauge("handoff.semaphore.available"));
        assertEquals(0.0, gauge("handoff.semaphore.queue.length"));
        assertEquals(0.0, gauge("handoff.semaphore.queue.permits"));

        assertTrue(s.tryAcquire(7));
        assertEquals(3.0, gauge("handoff.semaphore.available"));

        CompletableFuture<Permits> five = s.acquireAsync(5);
        CompletableFuture<Permits> two = s.acquireAsync(2);
        assertEquals(2.0, gauge("handoff.semaphore.queue.length"));
        assertEquals(7.0, gauge("handoff.semaphore.queue.permits"));
        assertEquals(0.0, gauge("handoff.semaphore.available"), "0 whenever somebody waits");

        s.setCapacity(12);
        assertEquals(12.0, gauge("handoff.semaphore.capacity"));
        five.get(5, TimeUnit.SECONDS); // 3 free + 2 new = 5
        assertEquals(1.0, gauge("handoff.semaphore.queue.length"));
        assertEquals(2.0, gauge("handoff.semaphore.queue.permits"));

        s.release(7);
        two.get(5, TimeUnit.SECONDS);
        assertEquals(0.0, gauge("handoff.semaphore.queue.length"));
        assertEquals(0.0, gauge("handoff.semaphore.queue.permits"));
        assertEquals(5.0, gauge("handoff.semaphore.available"));
        s.release(7);
        assertEquals(12.0, gauge("handoff.semaphore.available"));
    }

    // ------------------------------------------------------------------ timers per outcome

    @Test
    void everyOutcomeOfARealWaitIsTimed() throws Exception {
        Semaphore s = monitored(4);
        assertEquals(List.of(0L, 0L, 0L, 0L, 0L), waitCounts(), "registered at bind time, at zero");
        assertTrue(s.tryAcquire(4));

        // granted, after a wait of at least 30 ms
        CompletableFuture<Permits> granted = s.acquireAsync(3);
        TimeUnit.MILLISECONDS.sleep(30);
        s.release(3);
        granted.get(5, TimeUnit.SECONDS);
        assertEquals(List.of(1L, 0L, 0L, 0L, 0L), waitCounts());
        assertTrue(
                timer(WaitOutcome.GRANTED).totalTime(TimeUnit.MILLISECONDS) >= 30,
                "waited " + timer(WaitOutcome.GRANTED).totalTime(TimeUnit.MILLISECONDS) + " ms");
        assertEquals(3.0, weights(WaitOutcome.GRANTED).totalAmount());
        s.release(4); // the 1 left of the first 4, and the 3 granted
        assertTrue(s.tryAcquire(4));

        // cancelled
        CompletableFuture<Permits> cancelled = s.acquireAsync(2);
        assertTrue(cancelled.cancel(false));
        assertEquals(List.of(1L, 1L, 0L, 0L, 0L), waitCounts());

        // timed out, blocking
        assertFalse(s.tryAcquireBlocking(1, Duration.ofMillis(20)));
        assertEquals(List.of(1L, 1L, 1L, 0L, 0L), waitCounts());
        assertTrue(
                timer(WaitOutcome.TIMED_OUT).totalTime(TimeUnit.MILLISECONDS)
                        >= 15, // measured from joining the queue, a little after the call
                "waited " + timer(WaitOutcome.TIMED_OUT).totalTime(TimeUnit.MILLISECONDS) + " ms");

        // failed: the capacity shrank below the weight
        Acquisition tooHeavy = s.acquireThen(4, NO_OP);
        s.setCapacity(3);
        assertInstanceOf(IllegalStateException.class, tooHeavy.failure());
        assertEquals(List.of(1L, 1L, 1L, 0L, 1L), waitCounts());
        assertEquals(4.0, weights(WaitOutcome.FAILED).totalAmount());

        // closed
        CompletableFuture<Permits> closed = s.acquireAsync(1);
        s.close();
        ExecutionException e = assertThrows(ExecutionException.class, () -> closed.get(5, TimeUnit.SECONDS));
        assertInstanceOf(SemaphoreClosedException.class, e.getCause());
        assertEquals(List.of(1L, 1L, 1L, 1L, 1L), waitCounts());
        assertEquals(0.0, rejected().count());
    }

    @Test
    void grantsAtOnceAreNotTimed() throws Exception {
        Semaphore s = monitored(4);
        assertTrue(s.tryAcquire(1));
        s.acquireBlocking(1);
        s.acquireAsync(1).get();
        assertTrue(s.tryAcquireBlocking(1, Duration.ofSeconds(1)));
        s.release(4);
        assertEquals(List.of(0L, 0L, 0L, 0L, 0L), waitCounts());
    }

    @Test
    void sheddingIsCounted() throws Exception {
        SemaphoreMetrics metrics = SemaphoreMetrics.of("test");
        Semaphore s = metrics.buildMonitored(Semaphore.builder(2).maxQueueLength(1));
        metrics.bindTo(registry);
        assertTrue(s.tryAcquire(2));
        CompletableFuture<Permits> waiting = s.acquireAsync(1);
        assertThrows(SemaphoreRejectedException.class, () -> s.tryAcquireBlocking(1, Duration.ofSeconds(5)));
        ExecutionException e =
                assertThrows(ExecutionException.class, () -> s.acquireAsync(2).get());
        assertInstanceOf(SemaphoreRejectedException.class, e.getCause());
        assertEquals(2.0, rejected().count());
        assertEquals(List.of(0L, 0L, 0L, 0L, 0L), waitCounts(), "a rejection is not a wait");
        s.release(1);
        waiting.get(5, TimeUnit.SECONDS);
        assertEquals(List.of(1L, 0L, 0L, 0L, 0L), waitCounts());
    }

    /**
     * The wiring matters: the same waits on a semaphore built without the listener leave every
     * count at zero (so {@link #everyOutcomeOfARealWaitIsTimed} fails when the listener is not
     * installed), and they count once it is.
     */
    @Test
    void withoutTheListenerNothingIsTimed() throws Exception {
        SemaphoreMetrics metrics = SemaphoreMetrics.of("test");
        Semaphore forgotten = new Semaphore(1); // no listener(metrics)
        metrics.monitor(forgotten).bindTo(registry);
        assertTrue(forgotten.tryAcquire(1));
        assertFalse(forgotten.tryAcquireBlocking(1, Duration.ofMillis(5)));
        assertEquals(List.of(0L, 0L, 0L, 0L, 0L), waitCounts());
        assertEquals(0.0, gauge("handoff.semaphore.available"), "the gauges work without the listener");

        MeterRegistry second = new SimpleMeterRegistry();
        SemaphoreMetrics installed = SemaphoreMetrics.of("test");
        Semaphore s = installed.buildMonitored(Semaphore.builder(1));
        installed.bindTo(second);
        assertTrue(s.tryAcquire(1));
        assertFalse(s.tryAcquireBlocking(1, Duration.ofMillis(5)));
        assertEquals(
                1,
                second.get("handoff.semaphore.wait")
                        .tag("outcome", "timed_out")
                        .timer()
                        .count());
    }

    @Test
    void composesWithOtherListeners() throws Exception {
        SemaphoreMetrics metrics = SemaphoreMetrics.of("test");
        AtomicLong mine = new AtomicLong();
        Semaphore s = Semaphore.builder(1)
                .listener(WaitListener.all(metrics, new WaitListener() {
                    @Override
                    public void settled(long permits, WaitOutcome outcome, long waitNanos, int waitersAhead) {
                        mine.incrementAndGet();
                    }
                }))
                .build();
        metrics.monitor(s).bindTo(registry);
        assertTrue(s.tryAcquire(1));
        assertFalse(s.tryAcquireBlocking(1, Duration.ofMillis(5)));
        assertEquals(1, mine.get());
        assertEquals(1, timer(WaitOutcome.TIMED_OUT).count());
    }

    // ------------------------------------------------------------------ names, tags, units

    @Test
    void defaultNamesTagsAndUnits() {
        monitored(8);
        Map<String, String> units = new TreeMap<>();
        for (Meter m : registry.getMeters()) {
            assertEquals("test", m.getId().getTag("name"), m.getId().toString());
            units.put(
                    m.getId().getName()
                            + (m.getId().getTag("outcome") == null
                                    ? ""
                                    : "/" + m.getId().getTag("outcome")),
                    String.valueOf(m.getId().getBaseUnit()));
        }
        assertEquals("permits", units.get("handoff.semaphore.capacity"));
        assertEquals("permits", units.get("handoff.semaphore.available"));
        assertEquals("null", units.get("handoff.semaphore.queue.length"));
        assertEquals("permits", units.get("handoff.semaphore.queue.permits"));
        assertEquals("seconds", units.get("handoff.semaphore.wait/granted"));
        assertEquals("permits", units.get("handoff.semaphore.wait.permits/timed_out"));
        assertEquals("null", units.get("handoff.semaphore.rejected"));
        assertEquals(4 + 5 + 5 + 1, registry.getMeters().size(), units.toString());
    }

    @Test
    void renamedTaggedAndInBytes() throws Exception {
        SemaphoreMetrics metrics = SemaphoreMetrics.builder("test")
                .prefix("uploads.limiter")
                .baseUnit("bytes")
                .tags("region", "eu", "tier", "free")
                .tags(List.of(Tag.of("zone", "b")))
                .build();
        Semaphore s = metrics.buildMonitored(Semaphore.builder(1024));
        metrics.bindTo(registry);
        assertEquals(15, registry.getMeters().size());
        for (Meter m : registry.getMeters()) {
            assertTrue(
                    m.getId().getName().startsWith("uploads.limiter."),
                    m.getId().getName());
            assertEquals("eu", m.getId().getTag("region"));
            assertEquals("free", m.getId().getTag("tier"));
            assertEquals("b", m.getId().getTag("zone"));
            assertEquals("test", m.getId().getTag("name"));
        }
        assertNull(registry.find("handoff.semaphore.capacity").gauge());
        assertEquals(
                "bytes",
                registry.get("uploads.limiter.capacity").gauge().getId().getBaseUnit());
        assertEquals(
                "bytes",
                registry.get("uploads.limiter.available").gauge().getId().getBaseUnit());
        assertEquals(
                "bytes",
                registry.get("uploads.limiter.queue.permits").gauge().getId().getBaseUnit());
        assertEquals(
                "bytes",
                registry.get("uploads.limiter.wait.permits")
                        .tag("outcome", "granted")
                        .summary()
                        .getId()
                        .getBaseUnit());
        assertEquals(
                1024.0,
                registry.get("uploads.limiter.capacity")
                        .tag("region", "eu")
                        .gauge()
                        .value());

        assertTrue(s.tryAcquire(1000));
        CompletableFuture<Permits> w = s.acquireAsync(100);
        assertEquals(
                100.0, registry.get("uploads.limiter.queue.permits").gauge().value());
        s.release(1000);
        w.get(5, TimeUnit.SECONDS);
        assertEquals(1, timer("uploads.limiter", WaitOutcome.GRANTED).count());
        assertEquals(
                100.0,
                registry.get("uploads.limiter.wait.permits")
                        .tag("outcome", "granted")
                        .summary()
                        .totalAmount());
    }

    @Test
    void recordsIntoEveryBoundRegistryOnce() throws Exception {
        SemaphoreMetrics metrics = SemaphoreMetrics.of("test");
        Semaphore s = metrics.buildMonitored(Semaphore.builder(1));
        MeterRegistry other = new SimpleMeterRegistry();
        metrics.bindTo(registry);
        metrics.bindTo(registry); // again: nothing changes
        metrics.bindTo(other);
        assertTrue(s.tryAcquire(1));
        assertFalse(s.tryAcquireBlocking(1, Duration.ofMillis(5)));
        assertEquals(1, timer(WaitOutcome.TIMED_OUT).count());
        assertEquals(
                1,
                other.get("handoff.semaphore.wait")
                        .tag("outcome", "timed_out")
                        .timer()
                        .count());
    }

    /** The snippet of the Javadoc of the core's {@code Semaphore.Builder.listener}. */
    @Test
    void theCoreJavadocSnippet() throws Exception {
        SemaphoreMetrics metrics =
                SemaphoreMetrics.builder("uploads").baseUnit("bytes").build(); // handoff-micrometer
        Semaphore budget =
                Semaphore.builder(64 << 20).name("uploads").listener(metrics).build();
        metrics.monitor(budget).bindTo(registry);

        assertTrue(budget.tryAcquire(64 << 20));
        assertFalse(budget.tryAcquireBlocking(1, Duration.ofMillis(5)));
        assertEquals(
                1,
                registry.get("handoff.semaphore.wait")
                        .tag("name", "uploads")
                        .tag("outcome", "timed_out")
                        .timer()
                        .count());
        assertEquals(
                "bytes",
                registry.get("handoff.semaphore.capacity").gauge().getId().getBaseUnit());
    }

    /** What the README warns about: the gauges hold the semaphore weakly. */
    @Test
    void anUnreferencedSemaphoreIsCollectedAndItsGaugesReadNaN() throws Exception {
        bindAndForget();
        Gauge capacity =
                registry.get("handoff.semaphore.capacity").tag("name", "test").gauge();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!Double.isNaN(capacity.value())) {
            assertTrue(System.nanoTime() < deadline, "the semaphore was never collected");
            System.gc();
            Thread.sleep(10);
        }
        assertTrue(
                Double.isNaN(registry.get("handoff.semaphore.available").gauge().value()));
    }

    private void bindAndForget() {
        SemaphoreMetrics metrics = SemaphoreMetrics.of("test");
        metrics.buildMonitored(Semaphore.builder(3));
        metrics.bindTo(registry);
        assertEquals(3.0, gauge("handoff.semaphore.capacity"));
    }

    // ------------------------------------------------------------------ the primitive's name

    @Test
    void thePrimitivesNameIsTheDefaultNameTag() throws Exception {
        SemaphoreMetrics metrics = SemaphoreMetrics.builder().build();
        assertNull(metrics.name(), "no name known before a primitive is monitored");
        Semaphore s = Semaphore.builder(5).name("uploads").listener(metrics).build();
        metrics.monitor(s).bindTo(registry);
        assertEquals("uploads", metrics.name());
        assertEquals(15, registry.getMeters().size());
        for (Meter m : registry.getMeters()) {
            assertEquals("uploads", m.getId().getTag("name"), m.getId().toString());
        }
        assertTrue(s.tryAcquire(5));
        assertTrue(s.acquireAsync(1).cancel(false));
        assertEquals(
                1,
                registry.get("handoff.semaphore.wait")
                        .tag("name", "uploads")
                        .tag("outcome", "cancelled")
                        .timer()
                        .count());

        SemaphoreMetrics built = SemaphoreMetrics.builder().prefix("ingest").build();
        Semaphore other = built.buildMonitored(Semaphore.builder(2).name("parts"));
        built.bindTo(registry);
        assertEquals(
                2.0,
                registry.get("ingest.capacity").tag("name", "parts").gauge().value());
        assertEquals("parts", other.name());
    }

    @Test
    void aNameGivenToTheMetricsWinsOverThePrimitives() {
        SemaphoreMetrics metrics = SemaphoreMetrics.of("ingest-uploads");
        metrics.buildMonitored(Semaphore.builder(3).name("uploads"));
        metrics.bindTo(registry);
        assertEquals("ingest-uploads", metrics.name());
        for (Meter m : registry.getMeters()) {
            assertEquals("ingest-uploads", m.getId().getTag("name"), m.getId().toString());
        }
    }

    @Test
    void withoutAnyNameMonitorIsRefused() {
        SemaphoreMetrics metrics = SemaphoreMetrics.builder().build();
        Semaphore unnamed = new Semaphore(1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> metrics.monitor(unnamed));
        assertEquals(
                "monitor(" + unnamed + "): neither the semaphore nor this SemaphoreMetrics has a name, and every"
                        + " meter is tagged with one; name the semaphore in its builder (.name(\"uploads\")) or the metrics"
                        + " (SemaphoreMetrics.builder(\"uploads\"))",
                e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> metrics.monitor(new Mutex()));
        assertThrows(IllegalArgumentException.class, () -> metrics.buildMonitored(RwLock.builder(2)));
        IllegalStateException unbound = assertThrows(IllegalStateException.class, () -> metrics.bindTo(registry));
        assertTrue(
                unbound.getMessage().contains("SemaphoreMetrics (unnamed) monitors nothing yet"), unbound.getMessage());

        Semaphore named = Semaphore.builder(1).name("named").build();
        assertSame(metrics, metrics.monitor(named), "nothing was monitored by the refused calls");
        metrics.bindTo(registry);
        assertEquals(
                1.0,
                registry.get("handoff.semaphore.capacity")
                        .tag("name", "named")
                        .gauge()
                        .value());
    }

    // ------------------------------------------------------------------ Mutex and RwLock

    @Test
    void aMutexHasItsOwnMeters() throws Exception {
        SemaphoreMetrics metrics = SemaphoreMetrics.builder().build();
        Mutex m = metrics.buildMonitored(Mutex.builder().name("journal").maxQueueLength(1));
        metrics.bindTo(registry);
        Map<String, String> seen = new TreeMap<>();
        for (Meter meter : registry.getMeters()) {
            assertEquals("journal", meter.getId().getTag("name"), meter.getId().toString());
            if (!meter.getId().getName().endsWith(".wait")) { // the timers' unit is time
                assertNull(
                        meter.getId().getBaseUnit(), "a mutex's meters count callers, not permits: " + meter.getId());
            }
            seen.merge(meter.getId().getName(), "1", (a, b) -> String.valueOf(Integer.parseInt(a) + 1));
        }
        assertEquals(
                Map.of(
                        "handoff.mutex.locked",
                        "1",
                        "handoff.mutex.queue.length",
                        "1",
                        "handoff.mutex.wait",
                        "5",
                        "handoff.mutex.rejected",
                        "1"),
                seen);

        Gauge locked = registry.get("handoff.mutex.locked").gauge();
        Gauge queued = registry.get("handoff.mutex.queue.length").gauge();
        assertEquals(0.0, locked.value());
        Permits held = m.lockBlocking();
        assertEquals(1.0, locked.value());
        CompletableFuture<Permits> next = m.lockAsync();
        assertEquals(1.0, queued.value());
        ExecutionException shed =
                assertThrows(ExecutionException.class, () -> m.lockAsync().get());
        assertInstanceOf(SemaphoreRejectedException.class, shed.getCause());
        assertEquals(1.0, registry.get("handoff.mutex.rejected").counter().count());
        held.release();
        next.get(5, TimeUnit.SECONDS).release();
        assertEquals(0.0, queued.value());
        assertEquals(0.0, locked.value());
        assertEquals(1, timer("handoff.mutex", "journal", WaitOutcome.GRANTED).count());

        assertTrue(m.tryLock());
        assertTrue(m.lockAsync().cancel(false));
        assertEquals(1, timer("handoff.mutex", "journal", WaitOutcome.CANCELLED).count());
        m.unlock();
    }

    @Test
    void anRwLockHasItsOwnMeters() throws Exception {
        SemaphoreMetrics metrics =
                SemaphoreMetrics.builder().tags("tier", "hot").build();
        RwLock index = RwLock.builder(4).name("index").listener(metrics).build();
        metrics.monitor(index).bindTo(registry);
        assertEquals("handoff.rwlock", metrics.prefix());
        assertEquals(
                3 + 5 + 1, registry.getMeters().size(), registry.getMeters().toString());
        for (Meter meter : registry.getMeters()) {
            assertEquals("index", meter.getId().getTag("name"), meter.getId().toString());
            assertEquals("hot", meter.getId().getTag("tier"), meter.getId().toString());
        }
        Gauge writeLocked = registry.get("handoff.rwlock.write.locked").gauge();
        Gauge readers = registry.get("handoff.rwlock.read.locks").gauge();
        Gauge queued = registry.get("handoff.rwlock.queue.length").gauge();

        Permits first = index.readLockBlocking();
        Permits second = index.readLockBlocking();
        assertEquals(2.0, readers.value());
        assertEquals(0.0, writeLocked.value());
        CompletableFuture<RwLock.WritePermits> writer = index.writeLockAsync();
        assertEquals(1.0, queued.value());
        first.release();
        second.release();
        Permits write = writer.get(5, TimeUnit.SECONDS);
        assertEquals(1.0, writeLocked.value());
        assertEquals(0.0, readers.value());
        assertEquals(0.0, queued.value());
        assertEquals(1, timer("handoff.rwlock", "index", WaitOutcome.GRANTED).count());

        CompletableFuture<Permits> reader = index.readLockAsync();
        index.close();
        assertThrows(ExecutionException.class, () -> reader.get(5, TimeUnit.SECONDS));
        assertEquals(1, timer("handoff.rwlock", "index", WaitOutcome.CLOSED).count());
        write.release();
        assertEquals(0.0, writeLocked.value());
    }

    @Test
    void aPrefixGivenReplacesTheDefaultOfEveryKind() {
        SemaphoreMetrics metrics =
                SemaphoreMetrics.builder("test").prefix("journal.lock").build();
        assertEquals("journal.lock", metrics.prefix());
        metrics.buildMonitored(Mutex.builder());
        metrics.bindTo(registry);
        assertEquals(
                0.0,
                registry.get("journal.lock.locked").tag("name", "test").gauge().value());
        assertNull(registry.find("handoff.mutex.locked").gauge());
    }

    /**
     * The core tells a listener the name of each named primitive it is given to: a second one is
     * refused at build time, and monitor refuses a primitive other than the one listened to.
     */
    @Test
    void oneMetricsListensToOnePrimitive() {
        SemaphoreMetrics metrics = SemaphoreMetrics.builder().build();
        Semaphore.Builder uploads = Semaphore.builder(2).name("uploads").listener(metrics);
        Semaphore first = uploads.build();
        IllegalStateException twice = assertThrows(IllegalStateException.class, uploads::build);
        assertTrue(
                twice.getMessage()
                        .startsWith("attached(\"uploads\"): SemaphoreMetrics (unnamed) is the listener"
                                + " of the primitive named \"uploads\" already"),
                twice.getMessage());
        assertThrows(
                IllegalStateException.class,
                () -> Mutex.builder()
                        .name("journal")
                        .listener(WaitListener.all(new WaitListener() {}, metrics))
                        .build(),
                "WaitListener.all tells each of its listeners");

        IllegalArgumentException other = assertThrows(
                IllegalArgumentException.class,
                () -> metrics.monitor(Semaphore.builder(2).name("downloads").build()));
        assertTrue(
                other.getMessage()
                        .contains("is the listener of the primitive named \"uploads\", not of the"
                                + " semaphore named \"downloads\""),
                other.getMessage());
        assertSame(metrics, metrics.monitor(first));
    }

    // ------------------------------------------------------------------ misuse

    @Test
    void bindingBeforeASemaphoreIsKnownIsRefused() {
        SemaphoreMetrics metrics = SemaphoreMetrics.of("uploads");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> metrics.bindTo(registry));
        assertTrue(
                e.getMessage()
                        .startsWith("bindTo(SimpleMeterRegistry): SemaphoreMetrics \"uploads\" monitors nothing yet"),
                e.getMessage());
        assertTrue(registry.getMeters().isEmpty(), "nothing registered");
    }

    @Test
    void aSecondSemaphoreIsRefused() {
        SemaphoreMetrics metrics = SemaphoreMetrics.of("test");
        Semaphore first = Semaphore.builder(3).listener(metrics).build();
        Semaphore second = new Semaphore(5);
        assertSame(metrics, metrics.monitor(first));
        assertSame(metrics, metrics.monitor(first), "the same one again is fine");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> metrics.monitor(second));
        assertTrue(e.getMessage().contains("already monitors " + first), e.getMessage());
        assertThrows(IllegalStateException.class, () -> metrics.buildMonitored(Semaphore.builder(7)));
        metrics.bindTo(registry);
        assertEquals(3.0, gauge("handoff.semaphore.capacity"), "still the first semaphore");
        assertThrows(NullPointerException.class, () -> metrics.monitor((Semaphore) null));
        assertEquals(
                "monitor(null): the primitive is null (SemaphoreMetrics \"test\")",
                assertThrows(NullPointerException.class, () -> metrics.monitor((Mutex) null))
                        .getMessage());
        assertThrows(NullPointerException.class, () -> metrics.monitor((RwLock) null));
        assertThrows(
                IllegalStateException.class,
                () -> metrics.monitor(Mutex.builder().build()));
        assertThrows(NullPointerException.class, () -> metrics.bindTo(null));
        assertThrows(
                NullPointerException.class, () -> SemaphoreMetrics.of("x").buildMonitored((Semaphore.Builder) null));
        assertThrows(NullPointerException.class, () -> SemaphoreMetrics.of("x").buildMonitored((Mutex.Builder) null));
        assertThrows(NullPointerException.class, () -> SemaphoreMetrics.of("x").buildMonitored((RwLock.Builder) null));
    }

    @Test
    void badOptionsAreRefusedWithTheCallTheValueAndTheRule() {
        assertEquals(
                "SemaphoreMetrics.builder(null): the name is null",
                assertThrows(NullPointerException.class, () -> SemaphoreMetrics.of(null))
                        .getMessage());
        assertEquals(
                "SemaphoreMetrics.builder(\" \"): the name must not be blank",
                assertThrows(IllegalArgumentException.class, () -> SemaphoreMetrics.builder(" "))
                        .getMessage());

        SemaphoreMetrics.Builder b = SemaphoreMetrics.builder("test");
        assertEquals(
                "prefix(\"handoff.\"): must not start or end with a dot (the meter names add \".wait\", \".capacity\", ...)",
                assertThrows(IllegalArgumentException.class, () -> b.prefix("handoff."))
                        .getMessage());
        assertThrows(IllegalArgumentException.class, () -> b.prefix(""));
        assertThrows(NullPointerException.class, () -> b.prefix(null));
        assertEquals(
                "baseUnit(\"\"): the base unit must not be blank",
                assertThrows(IllegalArgumentException.class, () -> b.baseUnit(""))
                        .getMessage());
        assertEquals(
                "tags([region, eu, tier]): 3 strings, but keys and values come in pairs",
                assertThrows(IllegalArgumentException.class, () -> b.tags("region", "eu", "tier"))
                        .getMessage());
        assertThrows(NullPointerException.class, () -> b.tags("region", null));
        IllegalArgumentException own =
                assertThrows(IllegalArgumentException.class, () -> b.tags("region", "eu", "name", "x"));
        assertTrue(own.getMessage().contains("the key \"name\" is SemaphoreMetrics' own"), own.getMessage());
        assertThrows(IllegalArgumentException.class, () -> b.tags(List.of(Tag.of("outcome", "x"))));

        // State unchanged: none of the refused options took effect, not even the "region" before "name".
        SemaphoreMetrics metrics = b.build();
        metrics.buildMonitored(Semaphore.builder(1));
        metrics.bindTo(registry);
        Meter capacity = registry.get("handoff.semaphore.capacity").gauge();
        assertEquals("permits", capacity.getId().getBaseUnit());
        assertEquals(List.of(Tag.of("name", "test")), capacity.getId().getTags());
    }
}
