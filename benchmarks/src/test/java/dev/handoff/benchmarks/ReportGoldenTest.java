// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The text the reports write, byte for byte, for a small fixed set of measurements: results.md,
 * results.tsv and the console's rejection message of the main report, and fair-share.md. The
 * expected files are in {@code src/test/resources/golden/}; each run also writes what it rendered
 * (and the chart) to {@code target/golden/}, so that an intended change of the text is made by
 * copying those files over the expected ones, and reviewed as their diff.
 */
class ReportGoldenTest {
    private static final Machine MACHINE =
            new Machine("Test CPU @ 2.0GHz", 2, "Linux 6.1", "Temurin 17.0.9+9", LocalDate.of(2026, 1, 2), 0.42);
    private static final Path ACTUAL = Path.of("target", "golden");

    /** Two judged windows over the limit (one naming the processes), one quiet, one too short to judge. */
    private static final OtherLoad.Summary LOADED = OtherLoad.Summary.of(
            List.of(
                    new OtherLoad.Window(
                            "UncontendedBenchmark.tryAcquireRelease handoff, iteration 1", 1.0, 0.04, List.of()),
                    new OtherLoad.Window(
                            "CoroutineContendedBenchmark.tasks8permits2 kotlinx, iteration 3",
                            1.0,
                            0.61,
                            List.of(
                                    new OtherLoad.ProcessLoad(4242, "java", 0.55),
                                    new OtherLoad.ProcessLoad(77, "yes", 0.05))),
                    new OtherLoad.Window(
                            "WeightedBenchmark.capacity16weights1to8 monitor, iteration 2", 1.0, 0.31, List.of()),
                    new OtherLoad.Window("a short one", 0.01, 0.9, List.of())),
            0.12);

    private static final OtherLoad.Summary QUIET = OtherLoad.Summary.of(
            List.of(new OtherLoad.Window(
                    "FairShareFloodBenchmark.politeWait fair-share, iteration 1", 1.0, 0.03, List.of())),
            0.02);

    @Test
    void aFullRunRendersAsBefore() throws IOException {
        Report report = fullRun();
        Path out = Files.createDirectories(ACTUAL.resolve("full"));
        BenchmarkReport.write(report, out);
        Files.writeString(out.resolve("results.tsv"), report.tsv());
        String console = report.rejection(Path.of("/work/docs/benchmarks"), Path.of("/work/rejected-run"));
        Files.writeString(out.resolve("rejection.txt"), console);

        assertEquals(golden("full/results.md"), Files.readString(out.resolve("results.md")));
        assertEquals(golden("full/results.tsv"), report.tsv());
        assertEquals(golden("full/rejection.txt"), console);
        // --redraw reads results.tsv back into the same report.
        Report again = Report.parseTsv(report.tsv());
        assertEquals(report.tsv(), again.tsv());
        assertEquals(report.markdown(), again.markdown());
    }

    @Test
    void aSmokeRunRendersAsBefore() throws IOException {
        Map<String, Map<String, Measurement>> measured = new LinkedHashMap<>();
        put(measured, time(BenchmarkReport.TRY, Peers.HANDOFF, 9.87, 0.12, 0.0, 1.9, Double.NaN));
        put(measured, time(BenchmarkReport.TRY, Peers.KOTLINX, 14.2, 0.3, 0.0, 1.2, Double.NaN));
        put(measured, time(BenchmarkReport.COROUTINES, Peers.HANDOFF, 812, 40, 16.0, 3.1, 1250));
        put(measured, time(BenchmarkReport.COROUTINES, Peers.KOTLINX, 1010, 70, 48.5, 1.0, 64));
        Report report = new Report(MACHINE, Double.NaN, 3.4, true, 0, measured, LOADED);
        Path out = Files.createDirectories(ACTUAL.resolve("smoke"));
        BenchmarkReport.write(report, out);
        Files.writeString(out.resolve("results.tsv"), report.tsv());

        assertEquals(golden("smoke/results.md"), Files.readString(out.resolve("results.md")));
        assertEquals(golden("smoke/results.tsv"), report.tsv());
        assertEquals(report.markdown(), Report.parseTsv(report.tsv()).markdown());
    }

    @Test
    void theFairShareReportRendersAsBefore() throws IOException {
        Map<String, Map<String, Measurement>> measured = new LinkedHashMap<>();
        for (String peer : TenantPermits.ALL) {
            put(
                    measured,
                    new Measurement(
                            FairShareReport.FLOOD, peer, new Estimate(118.4, 21.7), "us/op", null, -1, -1, 2.4, 88));
        }
        for (String benchmark : List.of(FairShareReport.TRY, FairShareReport.HAND_OFF)) {
            for (int keys : FairShareReport.KEYS) {
                double scale = benchmark.equals(FairShareReport.TRY) ? 1 : 9.5;
                put(
                        measured,
                        new Measurement(
                                benchmark,
                                FairShareReport.costLabel(TenantPermits.FAIR_SHARE, keys),
                                new Estimate(27.3 * scale + keys / 100.0, 0.8),
                                "ns/op",
                                new Estimate(72, 0.1),
                                -1,
                                -1,
                                1.1,
                                Double.NaN));
                put(
                        measured,
                        new Measurement(
                                benchmark,
                                FairShareReport.costLabel(TenantPermits.SEMAPHORE, keys),
                                new Estimate(20.1 * scale, 0.5),
                                "ns/op",
                                new Estimate(48, 0.1),
                                -1,
                                -1,
                                1.05,
                                Double.NaN));
            }
        }
        Measurement earlier = new Measurement(
                FairShareReport.FLOOD,
                TenantPermits.FAIR_SHARE,
                new Estimate(240, 80),
                "us/op",
                null,
                -1,
                -1,
                1.3,
                455);
        List<FairShareReport.Wait> waits = List.of(
                new FairShareReport.Wait(
                        TenantPermits.ALL.get(0), 2_400, 9_800, new Estimate(3_100, 400), 1_234, 1, 3, 7, 81_000),
                new FairShareReport.Wait(
                        TenantPermits.ALL.get(1),
                        410_000,
                        2_300_000,
                        new Estimate(650_000, 90_000),
                        98,
                        40,
                        160,
                        210,
                        79_500),
                new FairShareReport.Wait(
                        TenantPermits.ALL.get(2),
                        3_900,
                        15_200,
                        new Estimate(5_000, 700),
                        1_100,
                        Double.NaN,
                        Double.NaN,
                        Double.NaN,
                        40_000));
        FairShareReport.Run run = new FairShareReport.Run(
                new Report(MACHINE, 0.61, 95.2, false, 0, measured, QUIET, List.of(earlier)), waits);
        Path out = Files.createDirectories(ACTUAL.resolve("fair-share"));
        Files.writeString(out.resolve(FairShareReport.MARKDOWN), run.markdown());

        assertEquals(golden("fair-share/" + FairShareReport.MARKDOWN), run.markdown());
    }

    /**
     * Every workload and peer of the main report, with a footprint, a lock storm on both shapes, an
     * unsteady and a far-cored measurement, one measured again, a note and a loaded machine.
     */
    private static Report fullRun() {
        Map<String, Map<String, Measurement>> measured = new LinkedHashMap<>();
        put(measured, time(BenchmarkReport.TRY, Peers.HANDOFF, 9.87, 0.12, 0.0004, 1.04, Double.NaN));
        put(measured, time(BenchmarkReport.TRY, Peers.HANDOFF_OBSERVED, 10.1, 0.2, 0.0004, 1.05, Double.NaN));
        put(measured, time(BenchmarkReport.TRY, Peers.JUC_FAIR, 11.5, 0.4, 0.0, 1.1, Double.NaN));
        put(measured, time(BenchmarkReport.TRY, Peers.JUC_NONFAIR, 9.2, 0.9, 0.0, 1.1, Double.NaN));
        put(measured, time(BenchmarkReport.TRY, Peers.KOTLINX, 14.2, 0.3, 0.0, 1.2, Double.NaN));
        put(measured, time(BenchmarkReport.TRY, Peers.MONITOR, 21.0, 1.5, 0.0, 1.3, Double.NaN));
        put(measured, time(BenchmarkReport.SUSPEND, Peers.HANDOFF, 22.5, 0.5, 1.7, 1.1, Double.NaN));
        put(measured, time(BenchmarkReport.SUSPEND, Peers.KOTLINX, 30.0, 0.6, 0.0, 1.1, Double.NaN));
        for (String blocking : List.of(BenchmarkReport.BLOCKING4, BenchmarkReport.BLOCKING8)) {
            double threads = blocking.equals(BenchmarkReport.BLOCKING4) ? 4 : 8;
            put(measured, throughput(blocking, Peers.HANDOFF, 3.1 * threads, 0.2, 4.2, 90));
            put(measured, throughput(blocking, Peers.JUC_FAIR, 0.9 * threads, 0.3, 1.7, 95));
            put(measured, throughput(blocking, Peers.JUC_NONFAIR, 5.5 * threads, 1.1, 1.2, 84));
            put(measured, throughput(blocking, Peers.MONITOR, 1.2 * threads, 0.1, 2.0, 99));
        }
        put(measured, counted(time(BenchmarkReport.COROUTINES, Peers.HANDOFF, 812, 40, 16.0, 1.2, 71), 16_000, 5_321));
        put(measured, counted(time(BenchmarkReport.COROUTINES, Peers.KOTLINX, 1010, 70, 48.5, 1.3, 64), 16_000, 6_002));
        put(measured, time(BenchmarkReport.COROUTINES, Peers.MONITOR, 1530, 150, 96.0, 1.4, 80));
        put(measured, time(BenchmarkReport.COROUTINES, Peers.HANDOFF_UNCANCELLABLE, 700, 35, 8.0, 1.2, 77));
        put(measured, time(BenchmarkReport.COROUTINES, Peers.HANDOFF_LISTENER, 820, 41, 16.0, 1.2, 75));
        put(measured, time(BenchmarkReport.COROUTINES, Peers.HANDOFF_RESIZED, 815, 44, 16.0, 1.2, 73));
        put(measured, time(BenchmarkReport.COROUTINES_LAUNCHED, Peers.HANDOFF, 760, 30, 12.0, 1.1, 70));
        put(measured, time(BenchmarkReport.COROUTINES_LAUNCHED, Peers.KOTLINX, 980, 60, 40.0, 1.1, 70));
        put(measured, counted(time(BenchmarkReport.WEIGHTED, Peers.HANDOFF, 2_400, 300, 20.0, 2.8, 82), 8_000, 0));
        put(measured, time(BenchmarkReport.WEIGHTED, Peers.KOTLINX_MUTEX, 9_800, 500, 120.0, 1.2, 80));
        put(measured, time(BenchmarkReport.WEIGHTED, Peers.MONITOR, 2_100, 400, 64.0, 1.3, 88));
        put(measured, time(BenchmarkReport.WEIGHTED, Peers.HANDOFF_UNCANCELLABLE, 2_000, 200, 10.0, 1.2, 79));
        put(measured, time(BenchmarkReport.WEIGHTED, Peers.HANDOFF_LISTENER, 2_450, 310, 20.0, 1.2, 79));
        put(measured, time(BenchmarkReport.WEIGHTED, Peers.HANDOFF_RESIZED, 2_390, 280, 20.0, 1.2, 79));
        put(measured, time(BenchmarkReport.FUTURES, Peers.HANDOFF, 3_300, 120, 88.0, 1.2, 455));
        put(measured, time(BenchmarkReport.FUTURES, Peers.KOTLINX, 4_100, 130, 150.0, 1.1, 90));
        put(
                measured,
                storm(
                        BenchmarkReport.STORM_PLATFORM,
                        Peers.HANDOFF,
                        5_200,
                        300,
                        new Storm(
                                new Estimate(9_900, 1_200),
                                1.87,
                                new Estimate(41_700_000, 2_100_000),
                                98_000_000,
                                "17.0.9")));
        put(
                measured,
                storm(
                        BenchmarkReport.STORM_PLATFORM,
                        Peers.JUC_FAIR,
                        7_900,
                        900,
                        new Storm(null, Double.NaN, new Estimate(640, 35), 2_400_000_000.0, "17.0.9")));
        put(
                measured,
                storm(
                        BenchmarkReport.STORM_VIRTUAL,
                        Peers.HANDOFF,
                        310,
                        12,
                        new Storm(new Estimate(480, 20), 1.99, new Estimate(12_500, 800), 77_000, "25.0.1")));
        put(measured, storm(BenchmarkReport.STORM_VIRTUAL, Peers.MONITOR, 0, 0, null));
        for (String peer : List.of(WaiterFootprint.BASELINE, Peers.HANDOFF, Peers.KOTLINX)) {
            double bytes = peer.equals(WaiterFootprint.BASELINE) ? 152.3 : peer.equals(Peers.HANDOFF) ? 232.8 : 301.6;
            put(
                    measured,
                    new Measurement(
                            BenchmarkReport.FOOTPRINT,
                            peer,
                            new Estimate(bytes, 0.4),
                            "B/waiter",
                            null,
                            -1,
                            -1,
                            Double.NaN,
                            Double.NaN));
        }
        List<Measurement> remeasured = List.of(
                time(BenchmarkReport.COROUTINES, Peers.HANDOFF, 1_900, 700, 16.0, 1.3, 480),
                time(BenchmarkReport.SUSPEND, Peers.KOTLINX, 45.0, 9.0, 0.0, 2.2, Double.NaN));
        List<String> notes = List.of(BenchmarkReport.WORKLOADS.get(BenchmarkReport.STORM_VIRTUAL)
                + ": run in forks on /opt/jdk-25/bin/java (--virtual-jvm); everything else on this JVM, JDK 17.0.9+9");
        return new Report(MACHINE, 0.87, 912.4, false, 1_000_000, measured, LOADED, remeasured, notes);
    }

    private static Measurement time(
            String benchmark, String peer, double nanos, double error, double bytes, double spread, double crossCore) {
        return new Measurement(
                benchmark,
                peer,
                new Estimate(nanos, error),
                "ns/op",
                new Estimate(bytes, bytes / 100),
                -1,
                -1,
                spread,
                crossCore);
    }

    private static Measurement throughput(
            String benchmark, String peer, double opsPerMicro, double error, double spread, double crossCore) {
        return new Measurement(
                benchmark, peer, new Estimate(opsPerMicro, error), "ops/us", null, -1, -1, spread, crossCore);
    }

    private static Measurement counted(Measurement m, long acquisitions, long suspended) {
        return new Measurement(
                m.benchmark(),
                m.peer(),
                m.score(),
                m.unit(),
                m.bytesPerOp(),
                acquisitions,
                suspended,
                m.spread(),
                m.crossCore(),
                m.storm());
    }

    private static Measurement storm(String benchmark, String peer, double nanos, double error, Storm storm) {
        return new Measurement(benchmark, peer, new Estimate(nanos, error), "ns/op", null, -1, -1, 1.6, 140, storm);
    }

    private static void put(Map<String, Map<String, Measurement>> measured, Measurement m) {
        BenchmarkReport.put(measured, m);
    }

    /** @return the expected text of {@code name} under {@code golden/} on the class path */
    private static String golden(String name) throws IOException {
        try (InputStream in = ReportGoldenTest.class.getResourceAsStream("/golden/" + name)) {
            if (in == null) {
                throw new IOException("golden/" + name + " is missing: copy it from "
                        + ACTUAL.resolve(name).toAbsolutePath() + " once its text is checked");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
