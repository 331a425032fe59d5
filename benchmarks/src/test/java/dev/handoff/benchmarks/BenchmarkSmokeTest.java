// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The CI smoke run: every benchmark once, with tiny iterations, in this JVM (the virtual-thread
 * storm in one fork on a JDK 21+ if this JVM is older), then the report and the chart, so none of
 * it rots. Asserts that everything ran and was reported, never how fast.
 */
class BenchmarkSmokeTest {
    private static final List<String> BLOCKING_PEERS =
            List.of(Peers.HANDOFF, Peers.JUC_FAIR, Peers.JUC_NONFAIR, Peers.MONITOR);

    /**
     * Whether the report can run the virtual-thread storm here: on this JVM (JDK 21+), or in forks on
     * a JDK 21+ installed beside it (JDK 17 with Temurin 25 next to it, as on CI's machine).
     */
    private static final boolean VIRTUAL_STORM =
            VirtualThreads.available() || VirtualThreads.javaBeside().isPresent();

    private static final Map<String, List<String>> EXPECTED = expected();

    private static Map<String, List<String>> expected() {
        Map<String, List<String>> expected = new java.util.LinkedHashMap<>(Map.of(
                BenchmarkReport.TRY,
                        List.of(
                                Peers.HANDOFF,
                                Peers.HANDOFF_OBSERVED,
                                Peers.JUC_FAIR,
                                Peers.JUC_NONFAIR,
                                Peers.KOTLINX,
                                Peers.MONITOR),
                BenchmarkReport.SUSPEND, List.of(Peers.HANDOFF, Peers.KOTLINX),
                BenchmarkReport.BLOCKING4, List.of(Peers.HANDOFF, Peers.JUC_FAIR, Peers.JUC_NONFAIR, Peers.MONITOR),
                BenchmarkReport.BLOCKING8, List.of(Peers.HANDOFF, Peers.JUC_FAIR, Peers.JUC_NONFAIR, Peers.MONITOR),
                BenchmarkReport.COROUTINES,
                        List.of(
                                Peers.HANDOFF,
                                Peers.KOTLINX,
                                Peers.MONITOR,
                                Peers.HANDOFF_UNCANCELLABLE,
                                Peers.HANDOFF_LISTENER,
                                Peers.HANDOFF_RESIZED),
                BenchmarkReport.COROUTINES_LAUNCHED, List.of(Peers.HANDOFF, Peers.KOTLINX),
                BenchmarkReport.WEIGHTED,
                        List.of(
                                Peers.HANDOFF,
                                Peers.KOTLINX_MUTEX,
                                Peers.MONITOR,
                                Peers.HANDOFF_UNCANCELLABLE,
                                Peers.HANDOFF_LISTENER,
                                Peers.HANDOFF_RESIZED),
                BenchmarkReport.FUTURES, List.of(Peers.HANDOFF, Peers.KOTLINX),
                BenchmarkReport.FOOTPRINT, List.of(WaiterFootprint.BASELINE, Peers.HANDOFF, Peers.KOTLINX)));
        expected.put(BenchmarkReport.STORM_PLATFORM, BLOCKING_PEERS);
        if (VIRTUAL_STORM) {
            expected.put(BenchmarkReport.STORM_VIRTUAL, BLOCKING_PEERS);
        }
        return expected;
    }

    @Test
    void everyBenchmarkRunsOnceAndIsReported() throws Exception {
        Path out = Path.of("target", "smoke");
        Settings settings = Settings.parse("--smoke", "--out", out.toString());
        Report report = BenchmarkReport.run(settings);

        for (Map.Entry<String, List<String>> e : EXPECTED.entrySet()) {
            Map<String, Measurement> byPeer = report.measured().get(e.getKey());
            assertTrue(byPeer != null, e.getKey() + " did not run");
            assertEquals(
                    e.getValue().stream().sorted().toList(),
                    byPeer.keySet().stream().sorted().toList(),
                    e.getKey());
            for (Measurement m : byPeer.values()) {
                assertTrue(Double.isFinite(m.score().value()) && m.score().value() > 0, m + ": no score");
                // Every JMH measurement was followed by a cross-core probe (not the footprint, not JMH).
                assertEquals(
                        !e.getKey().equals(BenchmarkReport.FOOTPRINT), m.crossCore() > 0, m + ": cross-core probe");
            }
        }
        // The contended coroutine and future workloads must really queue, or they measure only the fast path.
        for (String contended : List.of(
                BenchmarkReport.COROUTINES,
                BenchmarkReport.COROUTINES_LAUNCHED,
                BenchmarkReport.WEIGHTED,
                BenchmarkReport.FUTURES)) {
            for (Measurement m : report.measured().get(contended).values()) {
                assertTrue(m.acquisitions() > 0, m + ": acquisitions not counted");
                assertTrue(
                        m.suspended() > 0 || aRoundQueues(contended, m.peer()),
                        m + ": no acquisition suspended, in the smoke run nor in " + QUEUE_ROUNDS + " more rounds");
            }
        }
        assertEquals(24, report.timeComparisons().size(), report.markdown());
        // The lock storm's section: one row per peer and shape, every figure there and positive
        // (the CPU time has 10 ms ticks, and a storm takes far longer than that).
        assertEquals(VIRTUAL_STORM ? 8 : 4, report.stormRows().size(), report.markdown());
        assertEquals(VIRTUAL_STORM, report.measured().containsKey(BenchmarkReport.STORM_VIRTUAL), report.markdown());
        for (Measurement m : report.stormRows()) {
            Storm storm = m.storm();
            assertTrue(storm != null, m + ": no storm figures (ManyThreadsProfiler)");
            assertEquals("ns/op", m.unit(), m.toString());
            assertTrue(
                    storm.cpuPerOp() != null
                            && Double.isFinite(storm.cpuPerOp().value())
                            && storm.cpuPerOp().value() > 0,
                    m + ": CPU per operation");
            assertTrue(Double.isFinite(storm.cpus()) && storm.cpus() > 0, m + ": CPUs busy");
            assertTrue(Double.isFinite(storm.p99().value()) && storm.p99().value() > 0, m + ": p99");
            assertTrue(
                    Double.isFinite(storm.max()) && storm.max() >= storm.p99().value(), m + ": max below p99");
            assertFalse(storm.jdk().isEmpty(), m + ": JDK");
        }
        assertTrue(report.markdown().contains("Lock storm (workload 8)"), report.markdown());
        if (!VirtualThreads.available() && VIRTUAL_STORM) {
            assertTrue(
                    report.notes().stream().anyMatch(n -> n.contains("run in forks on")),
                    report.notes().toString());
        }
        // The diagnostics against plain handoff (a no-op WaitListener, a past resize) are reported in 3 and 4.
        for (String diagnostic : List.of(
                BenchmarkReport.COROUTINES_LISTENER,
                BenchmarkReport.COROUTINES_RESIZED,
                BenchmarkReport.WEIGHTED_LISTENER,
                BenchmarkReport.WEIGHTED_RESIZED)) {
            assertEquals(
                    1,
                    report.timeComparisons().stream()
                            .filter(c -> c.workload().equals(diagnostic)
                                    && c.peer().equals(BenchmarkReport.PLAIN_HANDOFF)
                                    && c.target() == null
                                    && Double.isFinite(c.ratio().value())
                                    && c.ratio().value() > 0)
                            .count(),
                    diagnostic + "\n" + report.markdown());
        }
        // The load of other processes was watched (one window per measured iteration: one per JMH
        // run here) and is stated; a smoke run is never rejected, however busy CI is.
        int jmhRuns = report.measured().entrySet().stream()
                .filter(e -> !e.getKey().equals(BenchmarkReport.FOOTPRINT))
                .mapToInt(e -> e.getValue().size())
                .sum();
        assertTrue(report.load().measured(), "load of other processes not measured");
        assertEquals(jmhRuns, report.load().windows(), report.markdown());
        assertFalse(report.rejected());
        assertTrue(report.markdown().contains("Load of other processes"), report.markdown());
        assertFalse(report.memoryComparisons().isEmpty(), report.markdown());
        assertTrue(Files.size(out.resolve("benchmarks.png")) > 10_000, "chart not written");
        assertTrue(Files.readString(out.resolve("results.md")).contains("| handoff / peer |"));
        assertTrue(Files.size(out.resolve("jmh-results.json")) > 0);
        // --redraw reads results.tsv back into the same report.
        Report again = Report.parseTsv(Files.readString(out.resolve("results.tsv")));
        assertEquals(report.markdown(), again.markdown());
    }

    /** How many more rounds {@link #aRoundQueues} may run. */
    private static final int QUEUE_ROUNDS = 200;

    /** One round of a contended workload, as JMH runs it. */
    private interface Round {
        void run(SuspensionCounters counters) throws Exception;
    }

    /**
     * Runs rounds of {@code benchmark} for {@code peer} here, as JMH runs them, until one has an
     * acquisition that queued; at most {@link #QUEUE_ROUNDS}. The smoke run measures a single
     * round, and the coroutine rounds queue only if their tasks overlap: a loaded machine may run
     * the 8 tasks of a round one after another (seen once in 3 smoke runs with two {@code yes} on
     * the 2 cores: CoroutineLaunchedBenchmark, handoff, 2,000 acquisitions, none suspended). A
     * workload that cannot queue fails all of them.
     */
    private static boolean aRoundQueues(String benchmark, String peer) throws Exception {
        long work = CoroutineContendedBenchmark.WORK; // every contended workload's @Param: 50
        Round round = switch (benchmark) {
            case BenchmarkReport.COROUTINES -> {
                CoroutineContendedBenchmark b = new CoroutineContendedBenchmark();
                b.peer = peer;
                b.work = work;
                b.setUp();
                yield b::tasks8permits2;
            }
            case BenchmarkReport.COROUTINES_LAUNCHED -> {
                CoroutineLaunchedBenchmark b = new CoroutineLaunchedBenchmark();
                b.peer = peer;
                b.work = work;
                b.setUp();
                yield b::tasks8permits2;
            }
            case BenchmarkReport.WEIGHTED -> {
                WeightedBenchmark b = new WeightedBenchmark();
                b.peer = peer;
                b.work = work;
                b.setUp();
                yield b::capacity16weights1to8;
            }
            case BenchmarkReport.FUTURES -> {
                FutureContendedBenchmark b = new FutureContendedBenchmark();
                b.peer = peer;
                b.work = work;
                b.setUp();
                yield b::chains8permits2;
            }
            default -> throw new IllegalArgumentException(benchmark);
        };
        SuspensionCounters counters = new SuspensionCounters();
        for (int i = 0; i < QUEUE_ROUNDS && counters.suspended == 0; i++) {
            round.run(counters);
        }
        return counters.suspended > 0;
    }

    @Test
    void theInterleavedComparisonTimesEveryPeerAgainstTheBaselineOfTheSameBlock() {
        for (CoroutineRounds.Start start : CoroutineRounds.Start.values()) {
            List<Interleaved.Result> results = Interleaved.run(Interleaved.PEERS, 3, 1, 1, start);
            assertEquals(
                    Interleaved.PEERS,
                    results.stream().map(Interleaved.Result::peer).toList(),
                    start.name());
            assertEquals(1.0, results.get(0).ratio(), 1e-12, start + ": the baseline against itself");
            for (Interleaved.Result r : results) {
                assertTrue(r.nanos() > 0 && Double.isFinite(r.nanos()), start + ", " + r + ": no time");
                assertTrue(
                        r.ratioLow() <= r.ratio() && r.ratio() <= r.ratioHigh(),
                        start + ", " + r + ": quartiles out of order");
            }
        }
        assertEquals(2.5, Interleaved.quantile(new double[] {1, 2, 3, 4}, 0.5), 1e-12);
        assertEquals(1.75, Interleaved.quantile(new double[] {1, 2, 3, 4}, 0.25), 1e-12);
        assertThrows(
                IllegalArgumentException.class,
                () -> Interleaved.run(List.of(Peers.KOTLINX), 1, 1, 0, CoroutineRounds.Start.LAUNCH));
        assertThrows(
                IllegalArgumentException.class,
                () -> Interleaved.run(
                        List.of(Peers.KOTLINX, Peers.KOTLINX), 1, 1, 0, CoroutineRounds.Start.ASYNC_AWAIT_ALL));
        assertThrows(
                IllegalArgumentException.class,
                () -> Interleaved.run(Interleaved.PEERS, 0, 1, 0, CoroutineRounds.Start.ASYNC_AWAIT_ALL));
    }

    @Test
    void ratiosCarryTheirErrorBars() {
        Estimate ratio = new Estimate(10, 1).divide(new Estimate(5, 0.5));
        assertEquals(2.0, ratio.value(), 1e-12);
        assertEquals(2.0 * Math.hypot(0.1, 0.1), ratio.error(), 1e-12);
        assertEquals(0.5, ratio.inverse().value(), 1e-12);
        assertEquals("met", Comparison.Target.atMost(1).verdict(new Estimate(0.8, 0.1)));
        assertEquals("within error", Comparison.Target.atMost(1).verdict(new Estimate(0.95, 0.1)));
        assertEquals("MISSED", Comparison.Target.atMost(1).verdict(new Estimate(1.2, 0.1)));
        assertEquals("met", Comparison.Target.atLeast(2).verdict(new Estimate(3, 0.5)));
        assertEquals("MISSED", Comparison.Target.atLeast(2).verdict(new Estimate(1.2, 0.5)));
    }

    @Test
    void everyPeerKeepsItsPermitsCounted() throws Exception {
        for (String name : BLOCKING_PEERS) {
            BlockingPermits p = Peers.blocking(name, 2);
            p.acquireBlocking(2);
            assertFalse(p.tryAcquire(1), name);
            p.release(2);
            assertTrue(p.tryAcquire(2), name);
            p.release(2);
        }
        for (String name : List.of(
                Peers.HANDOFF,
                Peers.HANDOFF_UNCANCELLABLE,
                Peers.HANDOFF_LISTENER,
                Peers.HANDOFF_RESIZED,
                Peers.KOTLINX_MUTEX,
                Peers.MONITOR)) {
            SuspendingPermits p = Peers.suspending(name, 16);
            long suspended = CoroutineRounds.run(p, 8, 20, new long[] {1, 2, 3, 4, 5, 6, 7, 8}, 10);
            assertTrue(suspended >= 0, name);
            assertTrue(p.tryAcquire(16), name + ": permits lost in the weighted round");
            p.release(16);
        }
        for (String name : List.of(Peers.HANDOFF, Peers.KOTLINX)) {
            FuturePermits p = Peers.future(name, 2);
            long waited = FutureRounds.run(p, 8, 50, 10, FutureRounds.POOL);
            assertTrue(waited > 0, name + ": no acquisition waited in the future round");
            assertTrue(p.tryAcquire(1) && p.tryAcquire(1), name + ": permits lost in the future round");
            assertFalse(p.tryAcquire(1), name);
            p.release(1);
            p.release(1);
        }
    }
}
