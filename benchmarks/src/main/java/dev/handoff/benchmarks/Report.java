// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import static dev.handoff.benchmarks.BenchmarkReport.BLOCKING4;
import static dev.handoff.benchmarks.BenchmarkReport.BLOCKING8;
import static dev.handoff.benchmarks.BenchmarkReport.COROUTINES;
import static dev.handoff.benchmarks.BenchmarkReport.COROUTINES_LAUNCHED;
import static dev.handoff.benchmarks.BenchmarkReport.COROUTINES_LISTENER;
import static dev.handoff.benchmarks.BenchmarkReport.COROUTINES_RESIZED;
import static dev.handoff.benchmarks.BenchmarkReport.COROUTINES_UNCANCELLABLE;
import static dev.handoff.benchmarks.BenchmarkReport.FOOTPRINT;
import static dev.handoff.benchmarks.BenchmarkReport.FUTURES;
import static dev.handoff.benchmarks.BenchmarkReport.PLAIN_HANDOFF;
import static dev.handoff.benchmarks.BenchmarkReport.STORM_PLATFORM;
import static dev.handoff.benchmarks.BenchmarkReport.STORM_VIRTUAL;
import static dev.handoff.benchmarks.BenchmarkReport.SUSPEND;
import static dev.handoff.benchmarks.BenchmarkReport.TRY;
import static dev.handoff.benchmarks.BenchmarkReport.WEIGHTED;
import static dev.handoff.benchmarks.BenchmarkReport.WEIGHTED_LISTENER;
import static dev.handoff.benchmarks.BenchmarkReport.WEIGHTED_RESIZED;
import static dev.handoff.benchmarks.BenchmarkReport.WEIGHTED_UNCANCELLABLE;
import static dev.handoff.benchmarks.BenchmarkReport.WORKLOADS;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The outcome of a run: the measurements, whether they may be published (the load of other
 * processes, unsteady or far-cored measurements), and the comparisons ours / peer derived from
 * them with the targets. Both reports judge a run here. What it looks like on disk lives apart:
 * {@link ReportMarkdown} renders results.md (and the shared parts of fair-share.md),
 * {@link ReportTsv} writes and reads results.tsv.
 *
 * @param machine   where and when
 * @param loadAfter the 1-minute load average at the end
 * @param seconds   how long the benchmarks took
 * @param smoke     whether this was a smoke run (figures meaningless)
 * @param waiters   the suspended coroutines of the footprint (0: not measured)
 * @param measured  benchmark → peer → measurement
 * @param load      the load of other processes while it measured
 * @param remeasured the attempts replaced by a later one because the cores were far apart or the
 *                  measurement unsteady, in order
 * @param notes     one-line notes on how the run was made (e.g. the JVM of the virtual-thread storm, or why it
 *                  did not run), printed with the lock storm
 */
public record Report(
        Machine machine,
        double loadAfter,
        double seconds,
        boolean smoke,
        int waiters,
        Map<String, Map<String, Measurement>> measured,
        OtherLoad.Summary load,
        List<Measurement> remeasured,
        List<String> notes) {
    /** A report in which nothing was measured again. */
    public Report(
            Machine machine,
            double loadAfter,
            double seconds,
            boolean smoke,
            int waiters,
            Map<String, Map<String, Measurement>> measured,
            OtherLoad.Summary load) {
        this(machine, loadAfter, seconds, smoke, waiters, measured, load, List.of());
    }

    /** A report without notes. */
    public Report(
            Machine machine,
            double loadAfter,
            double seconds,
            boolean smoke,
            int waiters,
            Map<String, Map<String, Measurement>> measured,
            OtherLoad.Summary load,
            List<Measurement> remeasured) {
        this(machine, loadAfter, seconds, smoke, waiters, measured, load, remeasured, List.of());
    }

    /**
     * @return whether the figures must not be published: a full run during which other
     *     processes used more than {@value OtherLoad#THRESHOLD_CPUS} CPU in a measured iteration,
     *     or with an {@linkplain #unsteady() unsteady} measurement, or one taken while the cores
     *     were {@linkplain #farCores() far apart}
     */
    public boolean rejected() {
        return !smoke && (load.loaded() || !unsteady().isEmpty() || !farCores().isEmpty());
    }

    /** @return the measurements taken while the cores were far apart (see {@link Measurement#farCores()}) */
    public List<Measurement> farCores() {
        return measurements(Measurement::farCores);
    }

    /**
     * @return the measurements whose iterations disagree by more than {@link Measurement#STEADY_SPREAD}
     *     (see {@link Measurement#unsteady()}): a fork or a minute of the run was slowed by
     *     something the load guard cannot see, such as a stretch in which the cores were far apart
     */
    public List<Measurement> unsteady() {
        return measurements(Measurement::unsteady);
    }

    List<Measurement> measurements(java.util.function.Predicate<Measurement> which) {
        List<Measurement> found = new ArrayList<>();
        for (Map<String, Measurement> byPeer : measured.values()) {
            for (Measurement m : byPeer.values()) {
                if (which.test(m)) {
                    found.add(m);
                }
            }
        }
        return found;
    }

    /** @return why this run is rejected, one line, or "" if it is not */
    String rejectionReason() {
        if (!rejected()) {
            return "";
        }
        List<String> why = new ArrayList<>();
        if (load.loaded()) {
            why.add(String.format(
                    Locale.ROOT,
                    "other processes used up to %.2f CPU while the benchmarks measured " + "(limit %.2f CPU)",
                    load.worst().otherCpus(),
                    OtherLoad.THRESHOLD_CPUS));
        }
        List<Measurement> unsteady = unsteady();
        if (!unsteady.isEmpty()) {
            why.add(String.format(
                    Locale.ROOT,
                    "the iterations of %s disagree by more than %.1fx (slowest / fastest), "
                            + "so something outside the VM slowed part of the run",
                    unsteady.stream()
                            .map(m -> String.format(Locale.ROOT, "%s %s (%.2fx)", m.benchmark(), m.peer(), m.spread()))
                            .collect(java.util.stream.Collectors.joining(", ")),
                    Measurement.STEADY_SPREAD));
        }
        List<Measurement> far = farCores();
        if (!far.isEmpty()) {
            why.add(String.format(
                    Locale.ROOT,
                    "a cache line took more than %.0f ns to go between the cores and back "
                            + "around %s: the host had placed the virtual CPUs far apart (400-500 ns), or a core was busy "
                            + "(microseconds)",
                    Measurement.CROSS_CORE_LIMIT_NANOS,
                    far.stream()
                            .map(m -> String.format(
                                    Locale.ROOT, "%s %s (%.0f ns)", m.benchmark(), m.peer(), m.crossCore()))
                            .collect(java.util.stream.Collectors.joining(", "))));
        }
        return String.join("; and ", why);
    }

    /**
     * @param out         where a quiet run would have written
     * @param rejectedOut where this run was written
     * @return the loud message for the console
     */
    String rejection(Path out, Path rejectedOut) {
        StringBuilder s = new StringBuilder();
        String bar = "!".repeat(100);
        s.append(bar).append('\n');
        if (load.loaded()) {
            s.append(String.format(
                    Locale.ROOT,
                    "!!! BENCHMARK RUN REJECTED: other processes used more than %.2f CPU "
                            + "in %d of %d measured iterations.%n",
                    OtherLoad.THRESHOLD_CPUS,
                    load.flagged().size(),
                    load.judged()));
            s.append("!!! Worst: ").append(load.worst().describe()).append('\n');
            int shown = Math.min(5, load.flagged().size());
            for (OtherLoad.Window w : load.flagged().subList(0, shown)) {
                s.append("!!!   ").append(w.describe()).append('\n');
            }
            if (load.flagged().size() > shown) {
                s.append("!!!   ... and ")
                        .append(load.flagged().size() - shown)
                        .append(" more, listed in results.md\n");
            }
        }
        for (Measurement m : unsteady()) {
            s.append(String.format(
                    Locale.ROOT,
                    "!!! BENCHMARK RUN REJECTED: %s %s is unsteady, its slowest measured "
                            + "iteration is %.2fx its fastest (limit %.1fx): part of the run was slowed by something the "
                            + "load guard cannot see (see docs/performance.md, Method).%n",
                    m.benchmark(),
                    m.peer(),
                    m.spread(),
                    Measurement.STEADY_SPREAD));
        }
        for (Measurement m : farCores()) {
            s.append(String.format(
                    Locale.ROOT,
                    "!!! BENCHMARK RUN REJECTED: %s %s ran while a cache line took %.0f ns "
                            + "to go between the cores and back (limit %.0f; close cores: 50-100): the host had placed the "
                            + "virtual CPUs far apart (400-500 ns), or a core was busy (microseconds); see docs/performance.md, Method.%n",
                    m.benchmark(),
                    m.peer(),
                    m.crossCore(),
                    Measurement.CROSS_CORE_LIMIT_NANOS));
        }
        s.append("!!! ").append(out.toAbsolutePath().normalize()).append(" was NOT touched (nor the README).\n");
        s.append("!!! This run's results are in ")
                .append(rejectedOut.toAbsolutePath().normalize())
                .append("; re-run on a quiet machine.\n");
        s.append(bar);
        return s.toString();
    }

    /** @return the rows of time and throughput, with the targets */
    public List<Comparison> timeComparisons() {
        List<Comparison> rows = new ArrayList<>();
        time(rows, TRY, Peers.JUC_FAIR, Comparison.Target.atMost(1));
        time(rows, TRY, Peers.JUC_NONFAIR, Comparison.Target.atMost(1));
        time(rows, TRY, Peers.KOTLINX, Comparison.Target.atMost(1));
        time(rows, TRY, Peers.MONITOR, null);
        // Issue 13: a semaphore with a WaitListener, against the same without: the fast path
        // must stay within 5% (the listener is only called on the slow path).
        time(
                rows,
                WORKLOADS.get(TRY) + ", with a WaitListener",
                TRY,
                Peers.HANDOFF_OBSERVED,
                Peers.HANDOFF,
                "handoff without",
                Comparison.Target.atMost(1.05));
        time(rows, SUSPEND, Peers.KOTLINX, Comparison.Target.atMost(1));
        for (String blocking : List.of(BLOCKING4, BLOCKING8)) {
            time(rows, blocking, Peers.JUC_FAIR, Comparison.Target.atLeast(2));
            time(rows, blocking, Peers.JUC_NONFAIR, null);
            time(rows, blocking, Peers.MONITOR, null);
        }
        time(rows, COROUTINES, Peers.KOTLINX, Comparison.Target.atMost(1));
        time(rows, COROUTINES, Peers.MONITOR, null);
        // Diagnostic, no target: ours suspended without kotlinx's cancellation machinery,
        // against kotlinx. The gap between this row and the one above is what public-API
        // cancellation costs per suspension (kotlinx pays it once per coroutine).
        time(
                rows,
                COROUTINES_UNCANCELLABLE,
                COROUTINES,
                Peers.HANDOFF_UNCANCELLABLE,
                Peers.KOTLINX,
                Peers.KOTLINX,
                null);
        // Diagnostics, no target: ours with a no-op WaitListener, and ours after a resize that
        // left the capacity as it was, each against plain ours. Above 1, the listener or the
        // past resize kept the semaphore off its lock-free paths.
        time(rows, COROUTINES_LISTENER, COROUTINES, Peers.HANDOFF_LISTENER, Peers.HANDOFF, PLAIN_HANDOFF, null);
        time(rows, COROUTINES_RESIZED, COROUTINES, Peers.HANDOFF_RESIZED, Peers.HANDOFF, PLAIN_HANDOFF, null);
        // No target: workload 3 with launched tasks, whose Jobs keep kotlinx's cheap single-handler
        // form, so the per-suspension Job handle of public-API cancellation costs one CAS each way.
        time(rows, COROUTINES_LAUNCHED, Peers.KOTLINX, null);
        time(rows, WEIGHTED, Peers.KOTLINX_MUTEX, Comparison.Target.atMost(0.5));
        time(rows, WEIGHTED, Peers.MONITOR, Comparison.Target.atMost(1));
        // Diagnostic, no target: the same split for the weighted workload, against its target peer.
        time(
                rows,
                WEIGHTED_UNCANCELLABLE,
                WEIGHTED,
                Peers.HANDOFF_UNCANCELLABLE,
                Peers.KOTLINX_MUTEX,
                Peers.KOTLINX_MUTEX,
                null);
        time(rows, WEIGHTED_LISTENER, WEIGHTED, Peers.HANDOFF_LISTENER, Peers.HANDOFF, PLAIN_HANDOFF, null);
        time(rows, WEIGHTED_RESIZED, WEIGHTED, Peers.HANDOFF_RESIZED, Peers.HANDOFF, PLAIN_HANDOFF, null);
        time(rows, FUTURES, Peers.KOTLINX, null);
        return rows;
    }

    /** @return the rows of bytes (per operation, per waiter), with the targets */
    public List<Comparison> memoryComparisons() {
        List<Comparison> rows = new ArrayList<>();
        bytes(rows, COROUTINES, Peers.KOTLINX, Comparison.Target.atMost(1.5));
        bytes(rows, COROUTINES, Peers.MONITOR, null);
        bytes(rows, COROUTINES_LAUNCHED, Peers.KOTLINX, null);
        bytes(rows, WEIGHTED, Peers.KOTLINX_MUTEX, null);
        bytes(rows, WEIGHTED, Peers.MONITOR, null);
        bytes(rows, FUTURES, Peers.KOTLINX, null);
        time(rows, FOOTPRINT, Peers.KOTLINX, Comparison.Target.atMost(1));
        return rows;
    }

    /** @return our bytes per operation on the uncontended paths; the target is 0 */
    public Map<String, Estimate> uncontendedBytes() {
        Map<String, Estimate> checks = new LinkedHashMap<>();
        for (String benchmark : List.of(TRY, SUSPEND)) {
            Measurement ours = find(benchmark, Peers.HANDOFF);
            if (ours != null && ours.bytesPerOp() != null) {
                checks.put(WORKLOADS.get(benchmark), ours.bytesPerOp());
            }
        }
        return checks;
    }

    private void time(List<Comparison> rows, String benchmark, String peer, Comparison.Target target) {
        time(rows, WORKLOADS.get(benchmark), benchmark, Peers.HANDOFF, peer, peer, target);
    }

    /**
     * Adds the row {@code label}: {@code oursPeer}'s time (or throughput) in {@code benchmark}
     * against {@code theirsPeer}'s, the latter named {@code peerLabel}; nothing if either is missing.
     */
    private void time(
            List<Comparison> rows,
            String label,
            String benchmark,
            String oursPeer,
            String theirsPeer,
            String peerLabel,
            Comparison.Target target) {
        Measurement ours = find(benchmark, oursPeer);
        Measurement theirs = find(benchmark, theirsPeer);
        if (ours != null && theirs != null) {
            boolean throughput = ours.unit().startsWith("ops/");
            rows.add(new Comparison(label, ours.unit(), peerLabel, ours.score(), theirs.score(), target, !throughput));
        }
    }

    private void bytes(List<Comparison> rows, String benchmark, String peer, Comparison.Target target) {
        Measurement ours = find(benchmark, Peers.HANDOFF);
        Measurement theirs = find(benchmark, peer);
        if (ours != null && theirs != null && ours.bytesPerOp() != null && theirs.bytesPerOp() != null) {
            rows.add(new Comparison(
                    WORKLOADS.get(benchmark), "B/op", peer, ours.bytesPerOp(), theirs.bytesPerOp(), target, true));
        }
    }

    private Measurement find(String benchmark, String peer) {
        Map<String, Measurement> byPeer = measured.get(benchmark);
        return byPeer == null ? null : byPeer.get(peer);
    }

    /** @return the whole report as Markdown, the contents of results.md ({@link ReportMarkdown}) */
    public String markdown() {
        return ReportMarkdown.of(this);
    }

    /** @return the lock storm's measurements (workload 8): 64 platform threads, then 10,000 virtual, peers in run order */
    public List<Measurement> stormRows() {
        List<Measurement> rows = new ArrayList<>();
        for (String storm : List.of(STORM_PLATFORM, STORM_VIRTUAL)) {
            Map<String, Measurement> byPeer = measured.get(storm);
            if (byPeer != null) {
                rows.addAll(byPeer.values());
            }
        }
        return rows;
    }

    /** @return the report as tab-separated values, the contents of results.tsv ({@link ReportTsv}) */
    public String tsv() {
        return ReportTsv.of(this);
    }

    /**
     * @param tsv what {@link #tsv()} wrote
     * @return the report
     * @throws IllegalArgumentException if the text is not such a report
     */
    public static Report parseTsv(String tsv) {
        return ReportTsv.parse(tsv);
    }
}
