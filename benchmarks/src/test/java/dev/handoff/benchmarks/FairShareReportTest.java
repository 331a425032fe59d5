// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fair share's report: its smoke run through JMH (every configuration once, in this JVM), its
 * tables from measurements given by hand, and its rejection of a loaded run.
 */
class FairShareReportTest {
    private static final Machine MACHINE = new Machine("cpu", 2, "Linux", "jdk", java.time.LocalDate.of(2026, 1, 1), 0.5);
    private static final OtherLoad.Summary QUIET =
            OtherLoad.Summary.of(List.of(new OtherLoad.Window("a", 1.0, 0.05, List.of())), 0.03);
    private static final OtherLoad.Summary LOADED =
            OtherLoad.Summary.of(List.of(new OtherLoad.Window("b", 1.0, 0.30, List.of())), 0.3);

    @Test
    void theSmokeRunMeasuresEveryConfigurationAndWritesTheReport() throws Exception {
        Path out = Path.of("target", "fair-share-smoke");
        FairShareReport.Run run = FairShareReport.run(FairShareReport.settings("--smoke", "--out", out.toString()));

        assertEquals(TenantPermits.ALL, run.waits().stream().map(FairShareReport.Wait::peer).toList());
        for (FairShareReport.Wait w : run.waits()) {
            assertTrue(w.samples() > 0 && w.p50() > 0 && w.p99() >= w.p50(), w.toString());
            // The flood profiler ran in this JVM and counted.
            assertTrue(w.behindP50() >= 0 && w.behindP99() >= w.behindP50() && w.noisyPerSecond() > 0, w.toString());
        }
        assertEquals(4, run.costComparisons().size(), run.markdown());
        assertEquals(2, run.bytesPerWaiter().size(), run.markdown());
        assertFalse(run.rejected());
        // One load window per measured iteration: one per JMH run in a smoke run.
        assertEquals(3 + 2 * 2 * 2, run.report().load().windows(), run.markdown());
        String md = Files.readString(out.resolve(FairShareReport.MARKDOWN));
        assertEquals(run.markdown(), md);
        for (String part : List.of("## A polite tenant's wait while a noisy tenant floods", "| Semaphore (FIFO) |",
                "## The cost of fairness, against the FIFO Semaphore", "| tryAcquire + release | 1,000 |",
                "Bytes allocated per wait", "Load of other processes", "Smoke run", "All measurements")) {
            assertTrue(md.contains(part), part + "\n" + md);
        }
        assertTrue(Files.size(out.resolve(FairShareReport.JSON)) > 0);
    }

    @Test
    void theSettingsRunTheFairShareBenchmarksAndTheMainReportLeavesThemOut() {
        BenchmarkReport.Settings s = FairShareReport.settings();
        assertEquals(0, s.waiters);
        assertEquals(Path.of("docs", "benchmarks"), s.out);
        Pattern fair = Pattern.compile(s.include);
        Pattern main = Pattern.compile(BenchmarkReport.Settings.parse().include);
        for (String b : List.of(FairShareReport.TRY, FairShareReport.HAND_OFF, FairShareReport.FLOOD)) {
            assertTrue(fair.matcher("dev.handoff.benchmarks." + b).find(), b);
            assertFalse(main.matcher("dev.handoff.benchmarks." + b).find(), b);
        }
        assertFalse(fair.matcher("dev.handoff.benchmarks." + BenchmarkReport.TRY).find());
        assertTrue(main.matcher("dev.handoff.benchmarks." + BenchmarkReport.TRY).find());
        assertThrows(IllegalArgumentException.class, () -> FairShareReport.settings("--waiters", "10"));
        assertEquals(null, FairShareReport.settings("--help"));
    }

    @Test
    void theCostTablesSetTheFairShareAgainstTheSemaphorePerKeyCount() {
        Map<String, Map<String, BenchmarkReport.Measurement>> measured = new LinkedHashMap<>();
        for (String benchmark : List.of(FairShareReport.TRY, FairShareReport.HAND_OFF)) {
            Map<String, BenchmarkReport.Measurement> byPeer = new LinkedHashMap<>();
            for (int keys : FairShareReport.KEYS) {
                double scale = benchmark.equals(FairShareReport.TRY) ? 1 : 10;
                byPeer.put(FairShareReport.costLabel(TenantPermits.FAIR_SHARE, keys), cost(benchmark, keys, 26 * scale, 64));
                byPeer.put(FairShareReport.costLabel(TenantPermits.SEMAPHORE, keys), cost(benchmark, keys, 20 * scale, 48));
            }
            measured.put(benchmark, byPeer);
        }
        FairShareReport.Run run = new FairShareReport.Run(
                new BenchmarkReport.Report(MACHINE, 0.5, 1, false, 0, measured, QUIET), List.of());
        List<Comparison> cost = run.costComparisons();
        assertEquals(4, cost.size());
        assertEquals(1.3, cost.get(0).ratio().value(), 1e-9);
        assertEquals("1", cost.get(0).peer());
        assertEquals("1,000", cost.get(1).peer());
        assertEquals("≤ 1.30", cost.get(0).target().toString());
        assertEquals(null, cost.get(1).target());
        assertEquals(List.of(64.0 / 48, 64.0 / 48), run.bytesPerWaiter().stream().map(c -> c.ratio().value()).toList());
        assertFalse(run.rejected());
        assertTrue(run.markdown().contains("| one wait, queued and handed off | 1,000 | 260 ns/op | 200 ns/op | 1.30 |"),
                run.markdown());
        assertFalse(run.markdown().contains("## A polite tenant's wait"), "no flood measured, no flood table");
    }

    @Test
    void theFloodMayBeErraticButNotFarCoredAndTheCostIsSingleThreaded() {
        BenchmarkReport.Measurement flood = new BenchmarkReport.Measurement(FairShareReport.FLOOD, TenantPermits.FAIR_SHARE,
                new Estimate(120, 30), "us/op", null, -1, -1, 3.0, 455);
        assertFalse(flood.unsteady(), "threads park and unpark: erratic by nature");
        assertTrue(flood.farCores(), "threads hand permits to each other");
        BenchmarkReport.Measurement cost = new BenchmarkReport.Measurement(FairShareReport.TRY,
                FairShareReport.costLabel(TenantPermits.FAIR_SHARE, 1), new Estimate(25, 1), "ns/op", null, -1, -1, 2.0, 455);
        assertTrue(cost.unsteady());
        assertFalse(cost.farCores(), "one thread");
        assertTrue(new FairShareReport.Run(new BenchmarkReport.Report(MACHINE, 0.5, 1, false, 0,
                Map.of(FairShareReport.TRY, Map.of(cost.peer(), cost)), QUIET), List.of()).rejected());
    }

    private static BenchmarkReport.Measurement cost(String benchmark, int keys, double nanos, double bytes) {
        return new BenchmarkReport.Measurement(benchmark, "peer, " + keys, new Estimate(nanos, 0), "ns/op",
                new Estimate(bytes, 0), -1, -1, 1.1, Double.NaN);
    }

    @Test
    void aLoadedRunIsRejectedAndLeavesTheOutputDirectoryAlone(@TempDir Path dir) throws Exception {
        Path out = Files.createDirectories(dir.resolve("docs"));
        Files.writeString(out.resolve(FairShareReport.MARKDOWN), "published");
        Path json = Files.writeString(dir.resolve("jmh.json"), "[]");
        BenchmarkReport.Settings settings = FairShareReport.settings("--out", out.toString(), "--rejected-out",
                dir.resolve("rejected").toString());

        FairShareReport.Run loaded = new FairShareReport.Run(
                new BenchmarkReport.Report(MACHINE, 0.5, 1, false, 0, Map.of(), LOADED), List.of());
        assertTrue(loaded.rejected());
        assertEquals(dir.resolve("rejected"), FairShareReport.publish(loaded, json, settings));
        assertEquals("published", Files.readString(out.resolve(FairShareReport.MARKDOWN)));
        assertEquals(List.of(out.resolve(FairShareReport.MARKDOWN)), Files.list(out).toList());
        String rejected = Files.readString(dir.resolve("rejected").resolve(FairShareReport.MARKDOWN));
        assertTrue(rejected.contains("**REJECTED RUN: other processes used up to 0.30 CPU"), rejected);
        assertTrue(Files.exists(dir.resolve("rejected").resolve(FairShareReport.JSON)));

        FairShareReport.Run quiet = new FairShareReport.Run(
                new BenchmarkReport.Report(MACHINE, 0.5, 1, false, 0, Map.of(), QUIET), List.of());
        assertEquals(out, FairShareReport.publish(quiet, json, settings));
        assertTrue(Files.readString(out.resolve(FairShareReport.MARKDOWN)).contains("**at most 0.05 CPU**"));
        // A smoke run is never rejected, however loaded.
        assertFalse(new FairShareReport.Run(new BenchmarkReport.Report(MACHINE, 0.5, 1, true, 0, Map.of(), LOADED),
                List.of()).rejected());
    }
}
