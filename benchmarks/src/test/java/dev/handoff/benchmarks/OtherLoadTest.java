// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The load accounting of the benchmark report on synthetic {@code /proc} snapshots: a machine of 2
 * CPUs, windows of 1 s (100 ticks per CPU), the report JVM is pid 100 with a JMH fork 101 (and the
 * fork's own child 102); pid 200 and its child 201 are somebody else's.
 */
class OtherLoadTest {
    private static final long SELF = 100;
    private static final long SECOND = 1_000_000_000L;
    /** The machine of the reports built by hand below. */
    private static final Machine MACHINE =
            new Machine("cpu", 2, "Linux", "jdk", java.time.LocalDate.of(2026, 1, 1), 0.5);
    /** A run in which other processes stayed below the limit (0.05 CPU at most). */
    private static final OtherLoad.Summary QUIET =
            OtherLoad.Summary.of(List.of(new OtherLoad.Window("a", 1.0, 0.05, List.of())), 0.03);
    /** A run in which other processes went above the limit (0.30 CPU). */
    private static final OtherLoad.Summary LOADED =
            OtherLoad.Summary.of(List.of(new OtherLoad.Window("b", 1.0, 0.30, List.of())), 0.3);

    /** {@code /proc/stat} of 2 CPUs; the per-CPU lines only count, their figures are not read. */
    private static String procStat(long user, long system, long idle, long steal) {
        return String.format(
                Locale.ROOT,
                "cpu  %d 0 %d %d 7 0 0 %d 0 0%n"
                        + "cpu0 1 0 1 1 0 0 0 0 0 0%ncpu1 1 0 1 1 0 0 0 0 0 0%nintr 12345 0 0%nctxt 999%n",
                user,
                system,
                idle,
                steal);
    }

    /** A {@code /proc/<pid>/stat} line, with the fields read here and plausible others. */
    private static String process(
            long pid, String name, long parent, long start, long utime, long stime, long cutime, long cstime) {
        return String.format(
                Locale.ROOT,
                "%d (%s) S %d %d %d 0 -1 4194304 100 0 0 0 %d %d %d %d 20 0 1 0 %d 1000 10",
                pid,
                name,
                parent,
                pid,
                pid,
                utime,
                stime,
                cutime,
                cstime,
                start);
    }

    private static OtherLoad.Snapshot snapshot(long nanos, String procStat, String... processes) {
        return OtherLoad.Snapshot.parse(nanos, procStat, List.of(processes));
    }

    @Test
    void parsesTheCpuLineAndCountsTheCpus() {
        OtherLoad.CpuTicks t = OtherLoad.CpuTicks.parse(
                "cpu  16466 3 3669 111229 129 5 34 27 11 2\ncpu0 8108 0 1709 55925 12 0 8 12 0 0\n"
                        + "cpu1 8358 0 1960 55303 116 0 26 14 0 0\nintr 1\n");
        // busy = user + nice + system + irq + softirq + steal; guest is inside user already
        assertEquals(16466 + 3 + 3669 + 5 + 34 + 27, t.busy());
        assertEquals(t.busy() + 111229 + 129, t.total());
        assertEquals(2, t.cpus());
        assertThrows(IllegalArgumentException.class, () -> OtherLoad.CpuTicks.parse("intr 1\n"));
    }

    @Test
    void parsesAProcessLineWhoseNameHasSpacesAndParentheses() {
        OtherLoad.ProcessTicks p = OtherLoad.ProcessTicks.parse(process(4242, "my (odd) name", 7, 555, 10, 20, 30, 40));
        assertEquals(4242, p.pid());
        assertEquals("my (odd) name", p.name());
        assertEquals(7, p.parent());
        assertEquals(555, p.start());
        assertEquals(100, p.ticks());
        assertThrows(IllegalArgumentException.class, () -> OtherLoad.ProcessTicks.parse("4242 no parentheses"));
    }

    @Test
    void findsTheReportJvmAndItsDescendantsOnly() {
        OtherLoad.Snapshot s = snapshot(
                0,
                procStat(0, 0, 0, 0),
                process(1, "init", 0, 1, 0, 0, 0, 0),
                process(SELF, "java", 1, 10, 0, 0, 0, 0),
                process(101, "java", SELF, 20, 0, 0, 0, 0),
                process(102, "sh", 101, 30, 0, 0, 0, 0),
                process(200, "make", 1, 40, 0, 0, 0, 0),
                process(201, "cc1", 200, 50, 0, 0, 0, 0));
        assertEquals(java.util.Set.of(SELF, 101L, 102L), s.family(SELF));
        assertTrue(s.family(999).isEmpty());
    }

    /** Before: the machine, ours and theirs at t = 0. */
    private static OtherLoad.Snapshot before() {
        return snapshot(
                0,
                procStat(1000, 500, 8000, 0),
                process(1, "init", 0, 1, 0, 0, 0, 0),
                process(SELF, "java", 1, 10, 300, 100, 0, 0),
                process(101, "java", SELF, 20, 400, 100, 0, 0),
                process(200, "make", 1, 40, 50, 10, 0, 0),
                process(201, "cc1", 200, 50, 20, 0, 0, 0));
    }

    @Test
    void otherProcessesAboveAQuarterOfACpuAreFlagged() {
        // In 1 s on 2 CPUs (200 ticks in all): 150 busy ticks, of which ours 110 (report 10, fork
        // 100), so others 40 ticks = 0.40 CPU: make 10, cc1 30.
        OtherLoad.Snapshot after = snapshot(
                SECOND,
                procStat(1000 + 130, 500 + 20, 8000 + 50, 0),
                process(1, "init", 0, 1, 0, 0, 0, 0),
                process(SELF, "java", 1, 10, 308, 102, 0, 0),
                process(101, "java", SELF, 20, 490, 110, 0, 0),
                process(200, "make", 1, 40, 58, 12, 0, 0),
                process(201, "cc1", 200, 50, 50, 0, 0, 0));
        OtherLoad.Window w = OtherLoad.between("X.y [peer=handoff], fork 1, iteration 1 of 5", before(), after, SELF);
        assertEquals(1.0, w.seconds(), 1e-9);
        assertEquals(0.40, w.otherCpus(), 1e-9);
        assertTrue(w.judged());
        assertTrue(w.overThreshold(), w.describe());
        assertEquals(
                List.of(new OtherLoad.ProcessLoad(201, "cc1", 0.30), new OtherLoad.ProcessLoad(200, "make", 0.10)),
                w.top());
        assertTrue(w.describe().contains("cc1 (pid 201) 0.30 CPU"), w.describe());
    }

    @Test
    void otherProcessesBelowAQuarterOfACpuAreNotFlagged() {
        // 150 busy ticks, ours 140 (report 30, fork 110), others 10 = 0.10 CPU (make).
        OtherLoad.Snapshot after = snapshot(
                SECOND,
                procStat(1000 + 130, 500 + 20, 8000 + 50, 0),
                process(1, "init", 0, 1, 0, 0, 0, 0),
                process(SELF, "java", 1, 10, 318, 112, 0, 0),
                process(101, "java", SELF, 20, 500, 110, 0, 0),
                process(200, "make", 1, 40, 58, 12, 0, 0),
                process(201, "cc1", 200, 50, 20, 0, 0, 0));
        OtherLoad.Window w = OtherLoad.between("quiet", before(), after, SELF);
        assertEquals(0.10, w.otherCpus(), 1e-9);
        assertFalse(w.overThreshold(), w.describe());
    }

    @Test
    void ourBusyForksAreNotOtherLoad() {
        // Both CPUs fully busy with our fork for 1 s: no other load at all.
        OtherLoad.Snapshot after = snapshot(
                SECOND,
                procStat(1000 + 200, 500, 8000, 0),
                process(1, "init", 0, 1, 0, 0, 0, 0),
                process(SELF, "java", 1, 10, 300, 100, 0, 0),
                process(101, "java", SELF, 20, 600, 100, 0, 0),
                process(200, "make", 1, 40, 50, 10, 0, 0),
                process(201, "cc1", 200, 50, 20, 0, 0, 0));
        assertEquals(0.0, OtherLoad.between("busy", before(), after, SELF).otherCpus(), 1e-9);
    }

    @Test
    void aForkThatEndsInTheWindowStaysOursThroughItsParentsChildrenTime() {
        // The fork (pid 101, 500 ticks so far) runs 60 more ticks, exits and is reaped: it is gone,
        // and the report JVM's cutime + cstime grew by its 560 ticks. Busy: 60 + report 5 + make 10.
        OtherLoad.Snapshot after = snapshot(
                SECOND,
                procStat(1000 + 75, 500, 8000 + 125, 0),
                process(1, "init", 0, 1, 0, 0, 0, 0),
                process(SELF, "java", 1, 10, 305, 100, 500, 60),
                process(200, "make", 1, 40, 60, 10, 0, 0),
                process(201, "cc1", 200, 50, 20, 0, 0, 0));
        OtherLoad.Window w = OtherLoad.between("fork ended", before(), after, SELF);
        assertEquals(0.10, w.otherCpus(), 1e-9);
        assertFalse(w.overThreshold());
    }

    @Test
    void stealCountsAsOtherLoadAndAReusedPidIsANewProcess() {
        // 15 ticks stolen by the hypervisor, and pid 201 is now another process (new start time)
        // that has used 10 ticks in all: 25 ticks = 0.25 CPU, not above the limit.
        OtherLoad.Snapshot after = snapshot(
                SECOND,
                procStat(1000 + 10, 500, 8000 + 175, 15),
                process(1, "init", 0, 1, 0, 0, 0, 0),
                process(SELF, "java", 1, 10, 300, 100, 0, 0),
                process(101, "java", SELF, 20, 400, 100, 0, 0),
                process(200, "make", 1, 40, 50, 10, 0, 0),
                process(201, "ld", 200, 60, 10, 0, 0, 0));
        OtherLoad.Window w = OtherLoad.between("steal", before(), after, SELF);
        assertEquals(0.25, w.otherCpus(), 1e-9);
        assertFalse(w.overThreshold(), "0.25 CPU is the limit itself, not above it");
        assertEquals(List.of(new OtherLoad.ProcessLoad(201, "ld", 0.10)), w.top());
    }

    @Test
    void aWindowTooShortForTheTickCountersIsNotJudged() {
        OtherLoad.Snapshot after = snapshot(
                SECOND / 50,
                procStat(1000 + 4, 500, 8000, 0),
                process(1, "init", 0, 1, 0, 0, 0, 0),
                process(SELF, "java", 1, 10, 300, 100, 0, 0),
                process(101, "java", SELF, 20, 400, 100, 0, 0),
                process(200, "make", 1, 40, 54, 10, 0, 0),
                process(201, "cc1", 200, 50, 20, 0, 0, 0));
        OtherLoad.Window w = OtherLoad.between("20 ms", before(), after, SELF);
        assertEquals(2.0, w.otherCpus(), 1e-9); // 4 ticks in a 2-tick window: the counters' coarseness
        assertFalse(w.judged());
        assertFalse(w.overThreshold());
    }

    @Test
    void theSummaryKeepsTheWorstWindowFlagsTheLoadedOnesAndSurvivesResultsTsv() {
        List<OtherLoad.Window> windows = new ArrayList<>(List.of(
                new OtherLoad.Window("a", 1.0, 0.05, List.of()),
                new OtherLoad.Window("b", 1.0, 0.30, List.of(new OtherLoad.ProcessLoad(7, "cc1", 0.28))),
                new OtherLoad.Window("c", 0.02, 3.0, List.of()),
                new OtherLoad.Window(
                        "d",
                        1.0,
                        0.90,
                        List.of(
                                new OtherLoad.ProcessLoad(8, "my, odd name", 0.5),
                                new OtherLoad.ProcessLoad(9, "ld", 0.4)))));
        OtherLoad.Summary s = OtherLoad.Summary.of(windows, 0.2);
        assertEquals(4, s.windows());
        assertEquals(3, s.judged());
        assertEquals("d", s.worst().label());
        assertEquals(
                List.of("b", "d"),
                s.flagged().stream().map(OtherLoad.Window::label).toList());
        assertTrue(s.loaded());
        assertTrue(s.markdown().contains("at most 0.90 CPU"), s.markdown());
        assertTrue(s.markdown().contains("2 measured iterations had other processes above 0.25 CPU"), s.markdown());

        List<String[]> lines = s.tsv().lines().map(l -> l.split("\t", -1)).toList();
        assertEquals(s, OtherLoad.Summary.parseTsv(lines));

        OtherLoad.Summary quiet = OtherLoad.Summary.of(windows.subList(0, 1), 0.01);
        assertFalse(quiet.loaded());
        assertTrue(quiet.markdown().contains("at most 0.05 CPU"), quiet.markdown());
        assertEquals(
                quiet,
                OtherLoad.Summary.parseTsv(
                        quiet.tsv().lines().map(l -> l.split("\t", -1)).toList()));

        OtherLoad.Summary none = OtherLoad.Summary.parseTsv(List.of());
        assertFalse(none.measured());
        assertNull(none.worst());
        assertTrue(none.markdown().contains("not measured"));
    }

    @Test
    void aFullRunWithLoadIsRejectedButASmokeRunIsNot() {
        Report full = new Report(MACHINE, 0.5, 1, false, 0, Map.of(), LOADED);
        Report smoke = new Report(MACHINE, 0.5, 1, true, 0, Map.of(), LOADED);
        assertTrue(full.rejected());
        assertTrue(full.markdown().startsWith("**REJECTED RUN"), full.markdown());
        assertTrue(
                full.rejection(Path.of("docs/benchmarks"), Path.of("rejected")).contains("was NOT touched"));
        assertFalse(smoke.rejected());
        assertTrue(smoke.markdown().contains("not enforced"), smoke.markdown());
    }

    @Test
    void aQuietRunWhoseIterationsDisagreeIsRejectedExceptInTheBlockingWorkloads() {
        Measurement steady = measurement(BenchmarkReport.COROUTINES, Peers.KOTLINX, 1.30);
        Measurement slowMinute = measurement(BenchmarkReport.COROUTINES, Peers.HANDOFF, 2.80);
        Measurement erraticByNature = measurement(BenchmarkReport.BLOCKING4, Peers.JUC_FAIR, 4.70);

        Report accepted = new Report(
                MACHINE,
                0.5,
                1,
                false,
                0,
                Map.of(
                        BenchmarkReport.COROUTINES, Map.of(Peers.KOTLINX, steady),
                        BenchmarkReport.BLOCKING4, Map.of(Peers.JUC_FAIR, erraticByNature)),
                QUIET);
        assertFalse(accepted.rejected(), accepted.markdown());
        assertEquals(List.of(), accepted.unsteady());
        assertTrue(accepted.markdown().contains("| 1.30 |"), accepted.markdown());

        Report rejected = new Report(
                MACHINE,
                0.5,
                1,
                false,
                0,
                Map.of(BenchmarkReport.COROUTINES, Map.of(Peers.KOTLINX, steady, Peers.HANDOFF, slowMinute)),
                QUIET);
        assertTrue(rejected.rejected());
        assertEquals(List.of(slowMinute), rejected.unsteady());
        assertTrue(
                rejected.markdown()
                        .startsWith("**REJECTED RUN: the iterations of CoroutineContendedBenchmark.tasks8permits2 "
                                + "handoff (2.80x) disagree"),
                rejected.markdown());
        assertTrue(rejected.markdown().contains("| 2.80 **unsteady** |"), rejected.markdown());
        String console = rejected.rejection(Path.of("docs/benchmarks"), Path.of("rejected"));
        assertTrue(
                console.contains("handoff is unsteady, its slowest measured iteration is 2.80x its fastest"), console);
        assertFalse(console.contains("other processes used"), console);
        // A smoke run is never rejected; the spread survives results.tsv (--redraw).
        assertFalse(new Report(MACHINE, 0.5, 1, true, 0, rejected.measured(), QUIET).rejected());
        assertEquals(rejected.markdown(), Report.parseTsv(rejected.tsv()).markdown());
    }

    @Test
    void aQuietSteadyRunTakenWhileTheCoresWereFarApartIsRejectedExceptForSingleThreadedWorkloads() {
        Measurement close = measurement(BenchmarkReport.COROUTINES, Peers.KOTLINX, 1.10, 72);
        Measurement far = measurement(BenchmarkReport.COROUTINES, Peers.HANDOFF, 1.10, 455);
        Measurement alone = measurement(BenchmarkReport.TRY, Peers.HANDOFF, 1.05, 455);

        Report accepted = new Report(
                MACHINE,
                0.5,
                1,
                false,
                0,
                Map.of(
                        BenchmarkReport.COROUTINES, Map.of(Peers.KOTLINX, close),
                        BenchmarkReport.TRY, Map.of(Peers.HANDOFF, alone)),
                QUIET);
        assertFalse(accepted.rejected(), accepted.markdown());
        assertTrue(
                accepted.markdown()
                        .contains("iteration of the workloads where threads hand permits to each other: 72 ns "
                                + "at the slowest"),
                accepted.markdown());
        assertTrue(accepted.markdown().contains("| 1.10 | 72 ns |"), accepted.markdown());

        Report rejected = new Report(
                MACHINE,
                0.5,
                1,
                false,
                0,
                Map.of(BenchmarkReport.COROUTINES, Map.of(Peers.KOTLINX, close, Peers.HANDOFF, far)),
                QUIET);
        assertTrue(rejected.rejected());
        assertEquals(List.of(), rejected.unsteady());
        assertEquals(List.of(far), rejected.farCores());
        assertTrue(
                rejected.markdown()
                        .startsWith("**REJECTED RUN: a cache line took more than 200 ns to go between the "
                                + "cores and back around CoroutineContendedBenchmark.tasks8permits2 handoff (455 ns)"),
                rejected.markdown());
        assertTrue(rejected.markdown().contains("| 455 ns **far** |"), rejected.markdown());
        String console = rejected.rejection(Path.of("docs/benchmarks"), Path.of("rejected"));
        assertTrue(console.contains("handoff ran while a cache line took 455 ns"), console);
        // The probe survives results.tsv (--redraw).
        assertEquals(rejected.markdown(), Report.parseTsv(rejected.tsv()).markdown());
    }

    @Test
    void whatWasMeasuredWhileTheCoresWereFarApartOrCameOutUnsteadyIsMeasuredAgainTheRestIsKept() {
        Measurement steady = measurement(BenchmarkReport.COROUTINES, Peers.KOTLINX, 1.10, 72);
        Measurement far = measurement(BenchmarkReport.COROUTINES, Peers.HANDOFF, 1.10, 455);
        Measurement unsteady = measurement(BenchmarkReport.WEIGHTED, Peers.HANDOFF, 2.80, 80);
        Measurement erraticByNature = measurement(BenchmarkReport.BLOCKING4, Peers.JUC_FAIR, 3.60, 80);
        Measurement alone = measurement(BenchmarkReport.TRY, Peers.HANDOFF, 1.05, 455);
        Map<String, Map<String, Measurement>> measured = new LinkedHashMap<>();
        measured.put(BenchmarkReport.TRY, Map.of(Peers.HANDOFF, alone));
        measured.put(BenchmarkReport.BLOCKING4, Map.of(Peers.JUC_FAIR, erraticByNature));
        measured.put(BenchmarkReport.COROUTINES, new LinkedHashMap<>(Map.of(Peers.KOTLINX, steady)));
        measured.get(BenchmarkReport.COROUTINES).put(Peers.HANDOFF, far);
        measured.put(BenchmarkReport.WEIGHTED, Map.of(Peers.HANDOFF, unsteady));
        assertEquals(List.of(far, unsteady), Remeasurement.toMeasureAgain(measured));
    }

    /** A cross-core probe of close cores, and one of far cores (or of a busy machine), in ns. */
    private static final double CLOSE = 60;

    private static final double FAR = 450;
    private static final long MILLI = 1_000_000L;

    /**
     * A host for {@link BenchmarkReport#awaitCloseCores(long, java.util.function.LongSupplier,
     * java.util.function.DoubleSupplier, Remeasurement.Pause)} whose clock only the probes and
     * the pauses move, so that the tests check the wait's logic and not the speed of the machine
     * running them (a real probe takes up to a second on a loaded machine: a test that expected a
     * real wait of 0 s failed in CI while other builds ran). The probes answer the scripted round
     * trips in turn, each taking {@code probeNanos}; a probe past the script fails the test (the
     * wait did not end when it should have) instead of hanging it.
     */
    private static final class FakeHost {
        private final long probeNanos;
        private final double[] script;
        /** Any start: only differences count. */
        private long now = 1_000 * SECOND;

        int probes;
        final List<Long> pauses = new ArrayList<>();

        FakeHost(long probeNanos, double... script) {
            this.probeNanos = probeNanos;
            this.script = script;
        }

        long await(long maxSeconds) {
            return Remeasurement.awaitCloseCores(maxSeconds, () -> now, this::probe, millis -> {
                pauses.add(millis);
                now += millis * MILLI;
            });
        }

        private double probe() {
            if (probes == script.length) {
                throw new AssertionError("probe " + (probes + 1) + ": the wait went on after the " + probes
                        + " probes that should have ended it");
            }
            now += probeNanos;
            return script[probes++];
        }
    }

    @Test
    void waitingForCloseCoresEndsByTheDeadlineEvenIfTheyNeverAreCloseLongEnough() {
        // A deadline of 0 s: one probe, whatever it finds, and no pause.
        FakeHost closeOnce = new FakeHost(MILLI, CLOSE);
        assertEquals(0, closeOnce.await(0));
        assertEquals(1, closeOnce.probes);
        assertEquals(List.of(), closeOnce.pauses);
        // The probe's own time is part of the wait: 1.5 s is a probe on a loaded machine (every
        // batch out of patience), which is what made the wall-clock version of this test fail.
        FakeHost loaded = new FakeHost(1_500 * MILLI, FAR);
        assertEquals(1, loaded.await(0));
        assertEquals(1, loaded.probes);
        // Never close: a probe every 5 s until one finds the deadline passed (0, 5, 10, 15 s for 12 s).
        FakeHost never = new FakeHost(0, FAR, FAR, FAR, FAR);
        assertEquals(15, never.await(12));
        assertEquals(4, never.probes);
        assertEquals(List.of(5_000L, 5_000L, 5_000L), never.pauses);
        // Close most of the time but never three probes in a row: the deadline ends it too.
        FakeHost flickering = new FakeHost(0, CLOSE, CLOSE, FAR, CLOSE, CLOSE, FAR, CLOSE);
        assertEquals(30, flickering.await(30));
        assertEquals(7, flickering.probes);
    }

    @Test
    void waitingForCloseCoresEndsAfterThreeCloseProbesInARowAndAFarOneStartsTheCountAgain() {
        FakeHost close = new FakeHost(MILLI, CLOSE, CLOSE, CLOSE);
        assertEquals(10, close.await(600)); // 0, 5 and 10 s, plus 3 ms of probes
        assertEquals(3, close.probes);
        assertEquals(List.of(5_000L, 5_000L), close.pauses);
        FakeHost atTheLimit = new FakeHost(
                0,
                Measurement.CROSS_CORE_LIMIT_NANOS,
                Measurement.CROSS_CORE_LIMIT_NANOS,
                Measurement.CROSS_CORE_LIMIT_NANOS);
        assertEquals(10, atTheLimit.await(600), "the limit itself counts as close");
        FakeHost farBetween = new FakeHost(0, FAR, CLOSE, CLOSE, FAR, CLOSE, CLOSE, CLOSE);
        assertEquals(30, farBetween.await(600));
        assertEquals(7, farBetween.probes);
    }

    @Test
    void waitingForCloseCoresEndsWhenInterruptedAndKeepsTheInterrupt() {
        long[] now = {0};
        int[] probes = {0};
        long waited = Remeasurement.awaitCloseCores(
                600,
                () -> now[0],
                () -> {
                    probes[0]++;
                    now[0] += 2_000 * MILLI;
                    return FAR;
                },
                millis -> {
                    throw new InterruptedException();
                });
        assertTrue(Thread.interrupted(), "the interrupt is kept for the caller"); // and cleared for the next test
        assertEquals(2, waited);
        assertEquals(1, probes[0]);
    }

    @Test
    void aMeasurementTakenAgainIsReportedWithTheAttemptItReplaced() throws Exception {
        Measurement first = measurement(BenchmarkReport.COROUTINES, Peers.HANDOFF, 1.10, 455);
        Measurement again = measurement(BenchmarkReport.COROUTINES, Peers.HANDOFF, 1.10, 80);
        Report report = new Report(
                MACHINE,
                0.5,
                1,
                false,
                0,
                Map.of(BenchmarkReport.COROUTINES, Map.of(Peers.HANDOFF, again)),
                QUIET,
                List.of(first));
        assertFalse(report.rejected(), report.markdown());
        assertTrue(
                report.markdown()
                        .contains("Measured again because the cores were far apart, or the measurement unsteady, "
                                + "during an earlier attempt"),
                report.markdown());
        assertTrue(
                report.markdown()
                        .contains("handoff: was 300 ± 10.0 ns/op, measured while the cores were far apart "
                                + "(455 ns)."),
                report.markdown());
        assertTrue(report.markdown().contains("every attempt's raw data is in jmh-results.json"), report.markdown());
        Report back = Report.parseTsv(report.tsv());
        assertEquals(List.of(first), back.remeasured());
        assertEquals(report.markdown(), back.markdown());

        // The JSON next to results.md holds every attempt: JMH's arrays, merged.
        Path dir = Files.createTempDirectory("merge");
        Path a = Files.writeString(dir.resolve("a.json"), "[\n  {\"benchmark\": \"a\"}\n]\n");
        Path b = Files.writeString(dir.resolve("b.json"), "[\n  {\"benchmark\": \"b\"}\n]\n");
        Path merged = JmhRuns.mergeJson(List.of(a, dir.resolve("missing.json"), b), dir.resolve("all.json"));
        assertEquals("[\n{\"benchmark\": \"a\"},\n{\"benchmark\": \"b\"}\n]\n", Files.readString(merged));
        assertEquals(a, JmhRuns.mergeJson(List.of(a), dir.resolve("one.json")), "one part is used as it is");
    }

    @Test
    void theCrossCoreProbeMeasuresARoundTrip() {
        double ns = CrossCoreProbe.roundTripNanos();
        // Not a timing assertion: only that two threads really handed the line back and forth.
        assertTrue(ns > 0 && ns < 1e8, "round trip " + ns + " ns");
    }

    private static Measurement measurement(String benchmark, String peer, double spread) {
        return measurement(benchmark, peer, spread, Double.NaN);
    }

    private static Measurement measurement(String benchmark, String peer, double spread, double crossCore) {
        return new Measurement(benchmark, peer, new Estimate(300, 10), "ns/op", null, -1, -1, spread, crossCore);
    }

    @Test
    void aRejectedRunLeavesTheOutputDirectoryAloneAndAQuietOneWritesIt(@TempDir Path dir) throws Exception {
        Path out = Files.createDirectories(dir.resolve("docs"));
        Files.writeString(out.resolve("results.md"), "published");
        Path json = Files.writeString(dir.resolve("jmh.json"), "[]");
        Settings settings = Settings.parse(
                "--out",
                out.toString(),
                "--rejected-out",
                dir.resolve("rejected").toString());

        Report rejected = new Report(MACHINE, 0.5, 1, false, 0, Map.of(), LOADED);
        assertEquals(dir.resolve("rejected"), BenchmarkReport.publish(rejected, json, settings));
        assertEquals("published", Files.readString(out.resolve("results.md")));
        assertEquals(List.of(out.resolve("results.md")), Files.list(out).toList());
        for (String file : List.of("results.md", "results.tsv", "jmh-results.json", "benchmarks.png")) {
            assertTrue(Files.exists(dir.resolve("rejected").resolve(file)), file);
        }
        assertTrue(Files.readString(dir.resolve("rejected/results.md")).startsWith("**REJECTED RUN"));

        Report accepted = new Report(MACHINE, 0.5, 1, false, 0, Map.of(), QUIET);
        assertEquals(out, BenchmarkReport.publish(accepted, json, settings));
        assertTrue(Files.readString(out.resolve("results.md")).contains("**at most 0.05 CPU**"));
        assertTrue(Files.exists(out.resolve("jmh-results.json")));
    }

    @Test
    void readsADirectoryLaidOutLikeProc(@TempDir Path proc) throws Exception {
        Files.writeString(proc.resolve("stat"), procStat(1000, 500, 8000, 0));
        for (String p :
                List.of(process(SELF, "java", 1, 10, 300, 100, 0, 0), process(101, "java", SELF, 20, 400, 100, 0, 0))) {
            Path dir = Files.createDirectory(proc.resolve(p.substring(0, p.indexOf(' '))));
            Files.writeString(dir.resolve("stat"), p);
        }
        Files.createDirectory(proc.resolve("self")); // not a pid: skipped
        Files.createDirectory(proc.resolve("4711")); // ended while read: no stat, skipped
        OtherLoad.Snapshot s = OtherLoad.Snapshot.read(proc, 0);
        assertEquals(2, s.processes().size());
        assertEquals(900, s.familyTicks(SELF));
    }

    @Test
    void readsTheRealProcWhereThereIsOne() throws Exception {
        assumeTrue(Files.isReadable(Path.of("/proc/stat")), "no /proc here");
        long self = ProcessHandle.current().pid();
        OtherLoad.Snapshot s = OtherLoad.Snapshot.read(Path.of("/proc"), System.nanoTime());
        assertTrue(s.family(self).contains(self));
        assertTrue(s.cpu().cpus() >= 1);
        assertTrue(s.familyTicks(self) > 0, "this JVM has used no CPU?");
    }
}
