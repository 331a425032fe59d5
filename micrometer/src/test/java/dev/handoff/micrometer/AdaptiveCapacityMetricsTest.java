// SPDX-License-Identifier: Apache-2.0
package dev.handoff.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Semaphore;
import dev.handoff.adaptive.AdaptiveCapacity;
import dev.handoff.adaptive.AdaptiveFairShare;
import dev.handoff.adaptive.CapacityListener;
import dev.handoff.adaptive.SampledPermits;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;
import org.junit.jupiter.api.Test;

/** The meters of an adaptive capacity and an adaptive fair share, on a virtual clock. */
class AdaptiveCapacityMetricsTest {
    static final long MS = 1_000_000L;

    final AtomicLong now = new AtomicLong(1_000 * MS);
    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    /** The user's own listener: every change by reason, to compare the counters with. */
    final Map<CapacityListener.Reason, Long> heard = new EnumMap<>(CapacityListener.Reason.class);

    final CapacityListener mine = (from, to, reason) -> heard.merge(reason, 1L, Long::sum);

    /**
     * One 100 ms window of rounds: {@code inFlight} handles taken, held {@code latencyMillis},
     * marked dropped if asked, then closed; a use of no permits at the end closes the window.
     */
    long window(LongFunction<SampledPermits> take, long inFlight, long latencyMillis, boolean drop) {
        long dropped = 0;
        long end = now.get() + 100 * MS;
        while (now.get() + latencyMillis * MS < end) {
            List<SampledPermits> held = new ArrayList<>();
            for (long i = 0; i < inFlight; i++) {
                SampledPermits p = take.apply(1);
                if (p != null) {
                    held.add(p);
                }
            }
            now.addAndGet(latencyMillis * MS);
            for (SampledPermits p : held) {
                if (drop) {
                    p.markDropped();
                    dropped++;
                }
                p.close();
            }
        }
        now.set(end);
        take.apply(0).close();
        return dropped;
    }

    double gauge(MeterRegistry r, String name, String object) {
        return r.get(name).tag("name", object).gauge().value();
    }

    double timeGauge(String name, String object) {
        return registry.get(name).tag("name", object).timeGauge().value(java.util.concurrent.TimeUnit.MILLISECONDS);
    }

    double changes(String object, CapacityListener.Reason reason) {
        return registry.get("handoff.adaptive.capacity.changes")
                .tags("name", object, "reason", AdaptiveCapacityMetrics.reasonTag(reason))
                .functionCounter()
                .count();
    }

    double drops(String object) {
        return registry.get("handoff.adaptive.drops")
                .tag("name", object)
                .functionCounter()
                .count();
    }

    /** Every reason's counter equals what the user's own listener heard. */
    void assertChangesAsHeard(String object) {
        for (CapacityListener.Reason reason : CapacityListener.Reason.values()) {
            assertEquals((double) heard.getOrDefault(reason, 0L), changes(object, reason), reason + " " + heard);
        }
    }

    @Test
    void theGaugesReadTheCapacityAndTheCountersFollowTheListener() throws Exception {
        AdaptiveCapacity a = AdaptiveCapacityMetrics.monitor(
                registry,
                "downstream",
                AdaptiveCapacity.builder(new Semaphore(5_000))
                        .minCapacity(2)
                        .maxCapacity(100)
                        .nanoClock(now::get)
                        .listener(mine));
        assertEquals(Map.of(CapacityListener.Reason.BOUNDS, 1L), heard, "the user's listener still hears");
        assertEquals(1.0, changes("downstream", CapacityListener.Reason.BOUNDS), "clamped by build(): counted");
        assertChangesAsHeard("downstream");
        assertEquals(100.0, gauge(registry, "handoff.adaptive.capacity", "downstream"));
        assertEquals(2.0, gauge(registry, "handoff.adaptive.capacity.min", "downstream"));
        assertEquals(100.0, gauge(registry, "handoff.adaptive.capacity.max", "downstream"));
        assertEquals(
                "permits",
                registry.get("handoff.adaptive.capacity").gauge().getId().getBaseUnit());
        assertTrue(Double.isNaN(timeGauge("handoff.adaptive.latency.baseline", "downstream")), "no window yet");
        assertTrue(Double.isNaN(timeGauge("handoff.adaptive.latency.window", "downstream")), "no window yet");

        SampledPermits three = a.acquireBlocking(3);
        assertEquals(3.0, gauge(registry, "handoff.adaptive.in.flight", "downstream"));
        three.markFailure(); // held no time: not a latency sample
        three.close();
        assertEquals(0.0, gauge(registry, "handoff.adaptive.in.flight", "downstream"));

        window(a::tryAcquire, 20, 10, false); // 10 ms at 20 in flight: the baseline
        assertEquals(10.0, timeGauge("handoff.adaptive.latency.baseline", "downstream"), 1e-9);
        assertEquals(10.0, timeGauge("handoff.adaptive.latency.window", "downstream"), 1e-9);
        window(a::tryAcquire, 20, 20, false); // twice the baseline: a latency cut
        assertEquals(10.0, timeGauge("handoff.adaptive.latency.baseline", "downstream"), 1e-9);
        assertEquals(20.0, timeGauge("handoff.adaptive.latency.window", "downstream"), 1e-9);
        assertEquals(1.0, changes("downstream", CapacityListener.Reason.LATENCY_CUT));

        double before = a.capacity();
        long dropped = window(a::tryAcquire, 10, 30, true); // rounds of 10 drops
        dropped += window(a::tryAcquire, 10, 30, true);
        assertTrue(dropped >= 30, "at least the first window's three rounds: " + dropped);
        assertEquals((double) dropped, drops("downstream"));
        assertTrue(changes("downstream", CapacityListener.Reason.DROP_CUT) >= 1, heard::toString);
        assertTrue(a.capacity() < before, a::toString);
        assertEquals(a.capacity(), gauge(registry, "handoff.adaptive.capacity", "downstream"));
        assertChangesAsHeard("downstream");
    }

    @Test
    void aFairShareIsTaggedWithItsOwnNameAndReadAsAWhole() throws Exception {
        FairShareSemaphore<String> database =
                FairShareSemaphore.<String>builder(40).name("database").build();
        AdaptiveCapacityMetrics metrics = AdaptiveCapacityMetrics.builder().build();
        AdaptiveFairShare<String> tenants = metrics.buildMonitored(AdaptiveFairShare.builder(database)
                .maxCapacity(60)
                .nanoClock(now::get)
                .listener(mine));
        metrics.bindTo(registry);
        assertEquals(40.0, gauge(registry, "handoff.adaptive.capacity", "database"));
        assertEquals(60.0, gauge(registry, "handoff.adaptive.capacity.max", "database"));

        String[] keys = {"a", "b"};
        int[] next = {0};
        LongFunction<SampledPermits> take = n -> tenants.tryAcquire(keys[next[0]++ % 2], n);
        window(take, 40, 10, false); // 10 ms at 40 in flight, the capacity in use: the baseline, and growth
        assertEquals(10.0, timeGauge("handoff.adaptive.latency.window", "database"), 1e-9);
        assertEquals(10.0, timeGauge("handoff.adaptive.latency.baseline", "database"), 1e-9);
        assertEquals(tenants.capacity(), gauge(registry, "handoff.adaptive.capacity", "database"));
        assertTrue(tenants.capacity() > 40, "grew: " + heard);
        assertEquals(1.0, changes("database", CapacityListener.Reason.GROWTH));

        SampledPermits a = tenants.acquireBlocking("a", 2);
        SampledPermits b = tenants.acquireBlocking("b", 3);
        assertEquals(5.0, gauge(registry, "handoff.adaptive.in.flight", "database"), "over every key");
        a.markDropped();
        a.close();
        b.close();
        assertEquals(1.0, drops("database"));
        assertEquals(0.0, gauge(registry, "handoff.adaptive.in.flight", "database"));
        assertChangesAsHeard("database");
    }

    @Test
    void theBuilderSetsThePrefixTheUnitAndTheTagsInEveryRegistry() {
        AdaptiveCapacityMetrics metrics = AdaptiveCapacityMetrics.builder("edge")
                .prefix("ingest.adaptive")
                .baseUnit("requests")
                .tags("service", "ingest")
                .build();
        AdaptiveCapacity a = AdaptiveCapacity.builder(new Semaphore(7))
                .listener(metrics)
                .nanoClock(now::get)
                .build();
        assertSame(metrics, metrics.monitor(a));
        assertSame(metrics, metrics.monitor(a), "the same object again: nothing changes");
        metrics.bindTo(registry);
        int meters = registry.getMeters().size();
        metrics.bindTo(registry); // the same registry again: nothing added
        assertEquals(meters, registry.getMeters().size());
        assertEquals(7 + CapacityListener.Reason.values().length, meters);
        SimpleMeterRegistry second = new SimpleMeterRegistry();
        metrics.bindTo(second);
        for (MeterRegistry r : List.of(registry, second)) {
            assertEquals(
                    7.0,
                    r.get("ingest.adaptive.capacity")
                            .tags("name", "edge", "service", "ingest")
                            .gauge()
                            .value());
            assertEquals(
                    "requests",
                    r.get("ingest.adaptive.in.flight").gauge().getId().getBaseUnit());
        }
        assertTrue(metrics.toString().contains("edge"), metrics::toString);
    }

    @Test
    void wrongUseIsRefusedWithAMessageThatNamesTheCall() {
        AdaptiveCapacityMetrics metrics = AdaptiveCapacityMetrics.builder().build();
        IllegalStateException unbound = assertThrows(IllegalStateException.class, () -> metrics.bindTo(registry));
        assertTrue(unbound.getMessage().startsWith("bindTo("), unbound.getMessage());
        AdaptiveCapacity unnamed = AdaptiveCapacity.builder(new Semaphore(4)).build();
        IllegalStateException noName = assertThrows(IllegalStateException.class, () -> metrics.monitor(unnamed));
        assertTrue(
                noName.getMessage().startsWith("monitor(")
                        && noName.getMessage().contains("no name"),
                noName.getMessage());
        AdaptiveCapacity named =
                AdaptiveCapacity.builder(Semaphore.builder(4).name("x").build()).build();
        metrics.monitor(named);
        IllegalStateException second = assertThrows(
                IllegalStateException.class, () -> metrics.buildMonitored(AdaptiveCapacity.builder(new Semaphore(2))));
        assertTrue(
                second.getMessage().startsWith("buildMonitored(builder)")
                        && second.getMessage().contains("already monitors"),
                second.getMessage());
        assertThrows(
                NullPointerException.class,
                () -> AdaptiveCapacityMetrics.monitor(null, "x", AdaptiveCapacity.builder(new Semaphore(1))));
        assertThrows(
                NullPointerException.class,
                () -> AdaptiveCapacityMetrics.monitor(registry, "x", (AdaptiveCapacity.Builder) null));
        IllegalArgumentException blank = assertThrows(
                IllegalArgumentException.class,
                () -> AdaptiveCapacityMetrics.monitor(registry, " ", AdaptiveCapacity.builder(new Semaphore(1))));
        assertTrue(blank.getMessage().startsWith("monitor(\" \")"), blank.getMessage());
        IllegalArgumentException ownTag = assertThrows(
                IllegalArgumentException.class,
                () -> AdaptiveCapacityMetrics.builder().tags("reason", "x"));
        assertTrue(ownTag.getMessage().startsWith("tags("), ownTag.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> AdaptiveCapacityMetrics.builder().tags("odd"));
        assertThrows(
                IllegalArgumentException.class,
                () -> AdaptiveCapacityMetrics.builder().prefix(".lead"));
        assertThrows(
                IllegalArgumentException.class,
                () -> AdaptiveCapacityMetrics.builder().baseUnit(""));
        assertEquals(0, registry.getMeters().size());
    }
}
