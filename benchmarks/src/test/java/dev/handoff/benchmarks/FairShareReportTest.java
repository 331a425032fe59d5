// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fair share's report: its smoke run through JMH (every configuration once, in this JVM), its
 * tables from measurements given by hand, what it measures again and how, and its rejection of a
 * loaded run or of one still far-cored after the last attempt.
 */
class FairShareReportTest {
    private static final Machine MACHINE =
            new Machine("cpu", 2, "Linux", "jdk", java.time.LocalDate.of(2026, 1, 1), 0.5);
    private static final OtherLoad.Summary QUIET =
            OtherLoad.Summary.of(List.of(new OtherLoad.Window("a", 1.0, 0.05, List.of())), 0.03);
    private static final OtherLoad.Summary LOADED =
            OtherLoad.Summary.of(List.of(new OtherLoad.Window("b", 1.0, 0.30, List.of())), 0.3);

    @Test
    void theSmokeRunMeasuresEveryConfigurationAndWritesTheReport() throws Exception {
        Path out = Path.of("target", "fair-share-smoke");
        FairShareReport.Run run = FairShareReport.run(FairShareReport.settings("--smoke", "--out", out.toString()));

        assertEquals(
                TenantPermits.ALL,
                run.waits().stream().map(FairShareReport.Wait::peer).toList());
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
        for (String part : List.of(
                "## A polite tenant's wait while a noisy tenant floods",
                "| Semaphore (FIFO) |",
                "## The cost of fairness, against the FIFO Semaphore",
                "| tryAcquire + release | 1,000 |",
                "Bytes allocated per wait",
                "Load of other processes",
                "Smoke run",
                "All measurements")) {
            assertTrue(md.contains(part), part + "\n" + md);
        }
        assertTrue(Files.size(out.resolve(FairShareReport.JSON)) > 0);
    }

    @Test
    void theSettingsRunTheFairShareBenchmarksAndTheMainReportLeavesThemOut() {
        Settings s = FairShareReport.settings();
        assertEquals(0, s.waiters);
        assertEquals(Path.of("docs", "benchmarks"), s.out);
        Pattern fair = Pattern.compile(s.include);
        Pattern main = Pattern.compile(Settings.parse().include);
        for (String b : List.of(FairShareReport.TRY, FairShareReport.HAND_OFF, FairShareReport.FLOOD)) {
            assertTrue(fair.matcher("dev.handoff.benchmarks." + b).find(), b);
            assertFalse(main.matcher("dev.handoff.benchmarks." + b).find(), b);
        }
        assertFalse(
                fair.matcher("dev.handoff.benchmarks." + BenchmarkReport.TRY).find());
        assertTrue(main.matcher("dev.handoff.benchmarks." + BenchmarkReport.TRY).find());
        assertThrows(IllegalArgumentException.class, () -> FairShareReport.settings("--waiters", "10"));
        assertEquals(null, FairShareReport.settings("--help"));
    }

    @Test
    void theRetriesAndTheWaitForCloseCoresAreOptionsOfTheFairShareReport() {
        Settings defaults = FairShareReport.settings();
        assertEquals(3, defaults.retries);
        assertEquals(600, defaults.closeWaitSeconds);
        Settings patient = FairShareReport.settings("--retries", "5", "--close-wait", "900");
        assertEquals(5, patient.retries);
        assertEquals(900, patient.closeWaitSeconds);
        assertEquals(0, FairShareReport.settings("--retries", "0").retries, "0: nothing is measured again");
        IllegalArgumentException negative =
                assertThrows(IllegalArgumentException.class, () -> FairShareReport.settings("--retries", "-1"));
        assertTrue(negative.getMessage().startsWith("--retries -1: must be 0 or more"), negative.getMessage());
        assertThrows(IllegalArgumentException.class, () -> FairShareReport.settings("--close-wait", "-5"));
        for (String option : List.of("[--retries N]", "[--close-wait S]", "  --retries N ", "  --close-wait S ")) {
            assertTrue(FairShareReport.USAGE.contains(option), option + "\n" + FairShareReport.USAGE);
        }
    }

    @Test
    void theCostTablesSetTheFairShareAgainstTheSemaphorePerKeyCount() {
        Map<String, Map<String, Measurement>> measured = new LinkedHashMap<>();
        for (String benchmark : List.of(FairShareReport.TRY, FairShareReport.HAND_OFF)) {
            Map<String, Measurement> byPeer = new LinkedHashMap<>();
            for (int keys : FairShareReport.KEYS) {
                double scale = benchmark.equals(FairShareReport.TRY) ? 1 : 10;
                byPeer.put(
                        FairShareReport.costLabel(TenantPermits.FAIR_SHARE, keys),
                        cost(benchmark, keys, 26 * scale, 64));
                byPeer.put(
                        FairShareReport.costLabel(TenantPermits.SEMAPHORE, keys),
                        cost(benchmark, keys, 20 * scale, 48));
            }
            measured.put(benchmark, byPeer);
        }
        FairShareReport.Run run =
                new FairShareReport.Run(new Report(MACHINE, 0.5, 1, false, 0, measured, QUIET), List.of());
        List<Comparison> cost = run.costComparisons();
        assertEquals(4, cost.size());
        assertEquals(1.3, cost.get(0).ratio().value(), 1e-9);
        assertEquals("1", cost.get(0).peer());
        assertEquals("1,000", cost.get(1).peer());
        assertEquals("≤ 1.30", cost.get(0).target().toString());
        assertEquals(null, cost.get(1).target());
        assertEquals(
                List.of(64.0 / 48, 64.0 / 48),
                run.bytesPerWaiter().stream().map(c -> c.ratio().value()).toList());
        assertFalse(run.rejected());
        assertTrue(
                run.markdown().contains("| one wait, queued and handed off | 1,000 | 260 ns/op | 200 ns/op | 1.30 |"),
                run.markdown());
        assertFalse(run.markdown().contains("## A polite tenant's wait"), "no flood measured, no flood table");
    }

    @Test
    void theFloodMayBeErraticButNotFarCoredAndTheCostIsSingleThreaded() {
        Measurement flood = new Measurement(
                FairShareReport.FLOOD,
                TenantPermits.FAIR_SHARE,
                new Estimate(120, 30),
                "us/op",
                null,
                -1,
                -1,
                3.0,
                455);
        assertFalse(flood.unsteady(), "threads park and unpark: erratic by nature");
        assertTrue(flood.farCores(), "threads hand permits to each other");
        Measurement cost = new Measurement(
                FairShareReport.TRY,
                FairShareReport.costLabel(TenantPermits.FAIR_SHARE, 1),
                new Estimate(25, 1),
                "ns/op",
                null,
                -1,
                -1,
                2.0,
                455);
        assertTrue(cost.unsteady());
        assertFalse(cost.farCores(), "one thread");
        assertTrue(new FairShareReport.Run(
                        new Report(
                                MACHINE,
                                0.5,
                                1,
                                false,
                                0,
                                Map.of(FairShareReport.TRY, Map.of(cost.peer(), cost)),
                                QUIET),
                        List.of())
                .rejected());
    }

    /** A flood measurement of {@code peer}: 120 ± 30 µs, its iterations' spread and the slowest probe given. */
    private static Measurement flood(String peer, double spread, double crossCore) {
        return new Measurement(
                FairShareReport.FLOOD, peer, new Estimate(120, 30), "us/op", null, -1, -1, spread, crossCore);
    }

    /** A cost measurement of {@code peer} on {@code keys} keys, as the report labels it. */
    private static Measurement cost(
            String benchmark, String peer, int keys, double nanos, double spread, double crossCore) {
        return new Measurement(
                benchmark,
                FairShareReport.costLabel(peer, keys),
                new Estimate(nanos, 1),
                "ns/op",
                null,
                -1,
                -1,
                spread,
                crossCore);
    }

    /** benchmark → peer → measurement, mutable as the report's, in the order given. */
    private static Map<String, Map<String, Measurement>> measured(Measurement... ms) {
        Map<String, Map<String, Measurement>> measured = new LinkedHashMap<>();
        for (Measurement m : ms) {
            BenchmarkReport.put(measured, m);
        }
        return measured;
    }

    @Test
    void aFarCoredFloodAndAnUnsteadyCostAreMeasuredAgainEachInItsOwnConfigurationASteadyCloseRowIsNot() {
        Measurement farFlood = flood(TenantPermits.FAIR_SHARE, 1.2, 455);
        Measurement erraticCloseFlood = flood(TenantPermits.SEMAPHORE, 3.0, 70); // erratic by nature
        Measurement steadyCloseFlood = flood(TenantPermits.JUC_CAPPED, 1.2, 70);
        Measurement unsteadyCost = cost(FairShareReport.TRY, TenantPermits.FAIR_SHARE, 1, 25, 2.0, 70);
        Measurement steadyCostFarProbe = cost(FairShareReport.TRY, TenantPermits.SEMAPHORE, 1, 20, 1.1, 455);
        Measurement steadyCost = cost(FairShareReport.HAND_OFF, TenantPermits.SEMAPHORE, 1000, 200, 1.1, 70);
        Map<String, Map<String, Measurement>> measured =
                measured(farFlood, erraticCloseFlood, steadyCloseFlood, unsteadyCost, steadyCostFarProbe, steadyCost);

        assertEquals(List.of(farFlood, unsteadyCost), Remeasurement.toMeasureAgain(measured));
        assertEquals("measured while the cores were far apart (455 ns)", farFlood.whyMeasuredAgain());
        assertEquals("unsteady (2.00x)", unsteadyCost.whyMeasuredAgain());
        // Each alone: the flood by its peer, a cost measurement by its peer and key count.
        assertEquals(Map.of("peer", TenantPermits.FAIR_SHARE), FairShareReport.params(farFlood));
        assertEquals(Map.of("peer", TenantPermits.FAIR_SHARE, "keys", "1"), FairShareReport.params(unsteadyCost));
        assertEquals(Map.of("peer", TenantPermits.SEMAPHORE, "keys", "1000"), FairShareReport.params(steadyCost));
        IllegalArgumentException unknown = assertThrows(
                IllegalArgumentException.class,
                () -> FairShareReport.params(cost(FairShareReport.TRY, TenantPermits.FAIR_SHARE, 7, 25, 2.0, 70)));
        assertTrue(
                unknown.getMessage()
                        .startsWith("FairShareReport.params: 'fair-share, 7 keys' of " + FairShareReport.TRY
                                + " is no configuration of the report (peers [fair-share, semaphore], keys [1, 1000])"),
                unknown.getMessage());
    }

    @Test
    void aMeasurementTakenAgainReplacesTheOldOneInTheTablesAndFairShareMdSaysWhatAndWhy() throws Exception {
        Measurement farFlood = flood(TenantPermits.FAIR_SHARE, 1.2, 455);
        Measurement steadyFlood = flood(TenantPermits.SEMAPHORE, 1.2, 70);
        Measurement unsteadyCost = cost(FairShareReport.TRY, TenantPermits.FAIR_SHARE, 1, 25, 2.0, 70);
        Measurement semaphoreCost = cost(FairShareReport.TRY, TenantPermits.SEMAPHORE, 1, 20, 1.1, 70);
        Map<String, Map<String, Measurement>> measured = measured(farFlood, steadyFlood, unsteadyCost, semaphoreCost);
        List<Measurement> attempts = new ArrayList<>();
        int[] closeWaits = {0};

        List<Measurement> replaced =
                Remeasurement.measureAgain(3, measured, () -> false, () -> closeWaits[0]++, old -> {
                    attempts.add(old);
                    return List.of(new Measurement(
                            old.benchmark(),
                            old.peer(),
                            new Estimate(old.score().value() / 2, 1),
                            old.unit(),
                            null,
                            -1,
                            -1,
                            1.1,
                            70));
                });

        assertEquals(List.of(farFlood, unsteadyCost), replaced);
        assertEquals(replaced, attempts, "each once: the second round found nothing left to measure again");
        assertEquals(2, closeWaits[0], "the cores were awaited before each attempt");
        Measurement floodAgain = measured.get(FairShareReport.FLOOD).get(TenantPermits.FAIR_SHARE);
        assertEquals(new Estimate(60, 1), floodAgain.score());
        assertEquals(70, floodAgain.crossCore());
        assertSame(steadyFlood, measured.get(FairShareReport.FLOOD).get(TenantPermits.SEMAPHORE));
        assertSame(semaphoreCost, measured.get(FairShareReport.TRY).get(semaphoreCost.peer()));
        assertEquals(
                List.of(TenantPermits.FAIR_SHARE, TenantPermits.SEMAPHORE),
                List.copyOf(measured.get(FairShareReport.FLOOD).keySet()),
                "replaced in place, in the run's order");

        FairShareReport.Run run =
                new FairShareReport.Run(new Report(MACHINE, 0.5, 1, false, 0, measured, QUIET, replaced), List.of());
        assertFalse(run.rejected(), run.markdown());
        assertEquals(
                new Estimate(12.5, 1), run.costComparisons().get(0).ours(), "the cost table shows the last attempt");
        String md = run.markdown();
        for (String part : List.of(
                "Measured again because the cores were far apart, or the measurement unsteady, during "
                        + "an earlier attempt (the figures below are the last attempt's; every attempt's raw data is in "
                        + FairShareReport.JSON + "): ",
                FairShareReport.FLOOD + " fair-share: was " + farFlood.score()
                        + " us/op, measured while the cores were far " + "apart (455 ns); ",
                FairShareReport.TRY + " fair-share, 1 key: was " + unsteadyCost.score()
                        + " ns/op, unsteady (2.00x).")) {
            assertTrue(md.contains(part), part + "\n" + md);
        }
        assertFalse(md.contains("REJECTED"), md);
    }

    @Test
    void aFloodStillFarCoredAfterTheLastRetryRejectsTheRun() throws Exception {
        Measurement farFlood = flood(TenantPermits.FAIR_SHARE, 1.2, 455);
        Map<String, Map<String, Measurement>> measured = measured(farFlood);
        List<Measurement> attempts = new ArrayList<>();
        Remeasurement.Attempt stillFar = old -> {
            attempts.add(old);
            return List.of(flood(old.peer(), 1.2, 300 + attempts.size()));
        };

        List<Measurement> replaced = Remeasurement.measureAgain(3, measured, () -> false, () -> {}, stillFar);

        assertEquals(3, attempts.size(), "--retries 3: three attempts, no more");
        assertEquals(attempts, replaced);
        assertSame(farFlood, replaced.get(0));
        assertEquals(
                303,
                measured.get(FairShareReport.FLOOD)
                        .get(TenantPermits.FAIR_SHARE)
                        .crossCore(),
                "the last attempt counts");
        FairShareReport.Run run =
                new FairShareReport.Run(new Report(MACHINE, 0.5, 1, false, 0, measured, QUIET, replaced), List.of());
        assertTrue(run.rejected());
        String md = run.markdown();
        assertTrue(
                md.startsWith(
                        "# The fair share: a polite tenant's wait, and the cost\n\n**REJECTED RUN: a cache line took "
                                + "more than 200 ns to go between the cores and back around " + FairShareReport.FLOOD
                                + " fair-share (303 ns)"),
                md);
        assertTrue(
                md.contains("fair-share: was 120 ± 30.0 us/op, measured while the cores were far apart (302 ns)."), md);
        assertTrue(run.report()
                .rejection(Path.of("docs/benchmarks"), Path.of("rejected"))
                .contains(FairShareReport.FLOOD + " fair-share ran while a cache line took 303 ns"));

        // --retries 0: nothing is measured again, and the run is rejected as it stands.
        Map<String, Map<String, Measurement>> once = measured(farFlood);
        assertEquals(List.of(), Remeasurement.measureAgain(0, once, () -> false, () -> {}, old -> {
            throw new AssertionError("measured again with --retries 0");
        }));
        assertSame(farFlood, once.get(FairShareReport.FLOOD).get(TenantPermits.FAIR_SHARE));
    }

    @Test
    void aLoadedRunIsRejectedAtOnceWithoutMeasuringAgain() throws Exception {
        Measurement farFlood = flood(TenantPermits.FAIR_SHARE, 1.2, 455);
        Measurement unsteadyCost = cost(FairShareReport.TRY, TenantPermits.FAIR_SHARE, 1, 25, 2.0, 70);
        Map<String, Map<String, Measurement>> measured = measured(farFlood, unsteadyCost);

        List<Measurement> replaced = Remeasurement.measureAgain(
                3,
                measured,
                () -> true,
                () -> {
                    throw new AssertionError("waited for close cores in a loaded run");
                },
                old -> {
                    throw new AssertionError("measured again in a loaded run");
                });

        assertEquals(List.of(), replaced);
        assertSame(farFlood, measured.get(FairShareReport.FLOOD).get(TenantPermits.FAIR_SHARE));
        FairShareReport.Run run =
                new FairShareReport.Run(new Report(MACHINE, 0.5, 1, false, 0, measured, LOADED, replaced), List.of());
        assertTrue(run.rejected());
        assertTrue(run.markdown().contains("**REJECTED RUN: other processes used up to 0.30 CPU"), run.markdown());
        assertFalse(run.markdown().contains("Measured again"), run.markdown());
    }

    @Test
    void anAttemptRunsOnlyItsOwnConfigurationThroughJmhAndReplacesItsWait(@TempDir Path dir) throws Exception {
        // Through JMH, in this JVM (smoke iterations): the flood of one peer, and one cost configuration.
        Settings settings = FairShareReport.settings("--smoke", "--retries", "1", "--close-wait", "0");
        Measurement farFlood = flood(TenantPermits.FAIR_SHARE, 1.2, 455);
        Measurement steadyFlood = flood(TenantPermits.SEMAPHORE, 1.2, 70);
        Measurement unsteadyCost = cost(FairShareReport.TRY, TenantPermits.SEMAPHORE, 1000, 25, 2.0, 70);
        Map<String, Map<String, Measurement>> measured = measured(farFlood, steadyFlood, unsteadyCost);
        FairShareReport.Wait stale =
                new FairShareReport.Wait(TenantPermits.FAIR_SHARE, 1, 2, new Estimate(1, 0), 1, 0, 0, 0, 1);
        FairShareReport.Wait semaphoreWait =
                new FairShareReport.Wait(TenantPermits.SEMAPHORE, 1, 2, new Estimate(1, 0), 1, 0, 0, 0, 1);
        Map<String, FairShareReport.Wait> waits = new LinkedHashMap<>();
        waits.put(TenantPermits.SEMAPHORE, semaphoreWait);
        waits.put(TenantPermits.FAIR_SHARE, stale);
        List<Path> jsons = new ArrayList<>(List.of(dir.resolve("first.json")));
        LoadGuard unwatched =
                LoadGuard.start(dir.resolve("no-proc"), ProcessHandle.current().pid());

        List<Measurement> replaced =
                Remeasurement.measureAgain(settings, measured, dir, jsons, unwatched, FairShareReport.rerun(waits));

        assertEquals(List.of(farFlood, unsteadyCost), replaced);
        assertEquals(
                List.of(TenantPermits.FAIR_SHARE, TenantPermits.SEMAPHORE),
                List.copyOf(measured.get(FairShareReport.FLOOD).keySet()),
                "no other peer of the flood was run");
        assertNotSame(farFlood, measured.get(FairShareReport.FLOOD).get(TenantPermits.FAIR_SHARE));
        assertSame(steadyFlood, measured.get(FairShareReport.FLOOD).get(TenantPermits.SEMAPHORE));
        assertEquals(
                List.of(unsteadyCost.peer()),
                List.copyOf(measured.get(FairShareReport.TRY).keySet()),
                "neither the other peer nor the other key count was run");
        Measurement costAgain = measured.get(FairShareReport.TRY).get(unsteadyCost.peer());
        assertNotSame(unsteadyCost, costAgain);
        assertEquals("ns/op", costAgain.unit());
        assertTrue(costAgain.score().value() > 0, costAgain.toString());
        FairShareReport.Wait fresh = waits.get(TenantPermits.FAIR_SHARE);
        assertNotSame(stale, fresh);
        assertTrue(fresh.samples() > 0 && fresh.p50() > 0, fresh.toString());
        assertSame(semaphoreWait, waits.get(TenantPermits.SEMAPHORE));
        assertEquals(
                List.of(fresh, semaphoreWait), FairShareReport.inPeerOrder(waits), "in the order of TenantPermits.ALL");
        assertEquals(3, jsons.size(), "one JSON file per attempt");
        assertTrue(Files.size(jsons.get(1)) > 0 && Files.size(jsons.get(2)) > 0);
    }

    private static Measurement cost(String benchmark, int keys, double nanos, double bytes) {
        return new Measurement(
                benchmark,
                "peer, " + keys,
                new Estimate(nanos, 0),
                "ns/op",
                new Estimate(bytes, 0),
                -1,
                -1,
                1.1,
                Double.NaN);
    }

    @Test
    void aLoadedRunIsRejectedAndLeavesTheOutputDirectoryAlone(@TempDir Path dir) throws Exception {
        Path out = Files.createDirectories(dir.resolve("docs"));
        Files.writeString(out.resolve(FairShareReport.MARKDOWN), "published");
        Path json = Files.writeString(dir.resolve("jmh.json"), "[]");
        Settings settings = FairShareReport.settings(
                "--out",
                out.toString(),
                "--rejected-out",
                dir.resolve("rejected").toString());

        FairShareReport.Run loaded =
                new FairShareReport.Run(new Report(MACHINE, 0.5, 1, false, 0, Map.of(), LOADED), List.of());
        assertTrue(loaded.rejected());
        assertEquals(dir.resolve("rejected"), FairShareReport.publish(loaded, json, settings));
        assertEquals("published", Files.readString(out.resolve(FairShareReport.MARKDOWN)));
        assertEquals(
                List.of(out.resolve(FairShareReport.MARKDOWN)), Files.list(out).toList());
        String rejected = Files.readString(dir.resolve("rejected").resolve(FairShareReport.MARKDOWN));
        assertTrue(rejected.contains("**REJECTED RUN: other processes used up to 0.30 CPU"), rejected);
        assertTrue(Files.exists(dir.resolve("rejected").resolve(FairShareReport.JSON)));

        FairShareReport.Run quiet =
                new FairShareReport.Run(new Report(MACHINE, 0.5, 1, false, 0, Map.of(), QUIET), List.of());
        assertEquals(out, FairShareReport.publish(quiet, json, settings));
        assertTrue(Files.readString(out.resolve(FairShareReport.MARKDOWN)).contains("**at most 0.05 CPU**"));
        // A smoke run is never rejected, however loaded.
        assertFalse(
                new FairShareReport.Run(new Report(MACHINE, 0.5, 1, true, 0, Map.of(), LOADED), List.of()).rejected());
    }
}
