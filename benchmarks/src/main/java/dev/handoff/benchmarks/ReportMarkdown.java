// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import static dev.handoff.benchmarks.BenchmarkReport.STORM_PLATFORM;
import static dev.handoff.benchmarks.BenchmarkReport.WORKLOADS;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Renders a {@link Report} as Markdown: results.md whole ({@link #of}), and the parts that the fair
 * share's report shares with it, its opening ({@link #header}: rejection, machine, load, cross-core
 * probe, what was measured again, smoke) and its closing table of every measurement
 * ({@link #measurements}). Only text is made here; what the text says (ratios, verdicts, why a
 * run is rejected) is decided by {@link Report} and {@link Measurement}. The console prints the
 * same text, and {@code --redraw} renders it again from results.tsv, so it must depend on nothing
 * but the report.
 */
final class ReportMarkdown {
    private ReportMarkdown() {}

    /** @return the whole report as Markdown: stamp, ratios, checks, raw measurements */
    static String of(Report r) {
        StringBuilder md = new StringBuilder(header(r, "jmh-results.json"));
        md.append("\nRatios ours / peer, same run; error bars are JMH's 99.9% confidence intervals ")
                .append("(footprint: half the range of the runs). A verdict counts only when the whole error bar ")
                .append("is on one side of the target.\n\n");
        md.append("| workload | metric | peer | handoff | peer value | handoff / peer | target | verdict |\n");
        md.append("|---|---|---|---:|---:|---:|---|---|\n");
        List<Comparison> all = new ArrayList<>(r.timeComparisons());
        all.addAll(r.memoryComparisons());
        for (Comparison c : all) {
            md.append(String.format(
                    Locale.ROOT,
                    "| %s | %s | %s | %s | %s | %s | %s | %s |%n",
                    c.workload(),
                    c.metric(),
                    c.peer(),
                    c.ours(),
                    c.theirs(),
                    c.ratio(),
                    c.target() == null ? "" : c.target(),
                    c.verdict()));
        }
        Map<String, Estimate> zero = r.uncontendedBytes();
        if (!zero.isEmpty()) {
            md.append(
                    "\nAllocation on the uncontended paths (target 0 B/op; below 1 B/op means none on the path):\n\n");
            for (Map.Entry<String, Estimate> e : zero.entrySet()) {
                md.append(String.format(
                        Locale.ROOT,
                        "- %s: handoff %s B/op: %s%n",
                        e.getKey(),
                        e.getValue(),
                        e.getValue().value() < 1 ? "met" : "MISSED"));
            }
        }
        if (r.waiters() > 0) {
            md.append(String.format(
                    Locale.ROOT,
                    "%nFootprint: %,d coroutines suspended in acquire(1) at once, "
                            + "live heap after full GCs in a fresh JVM (ParallelGC), per coroutine, the coroutine included; "
                            + "'baseline' is the same coroutine parked in awaitCancellation().%n",
                    r.waiters()));
        }
        md.append(storm(r));
        md.append(measurements(r));
        return md.toString();
    }

    /**
     * @param r    the report
     * @param json the name of the JMH results file beside it, which holds every attempt
     * @return the opening of results.md (and of the fair share's report): the rejection, if any,
     *     the machine, the load of other processes, the slowest cross-core round trip, what was
     *     measured again and why, and whether this was a smoke run
     */
    static String header(Report r, String json) {
        StringBuilder md = new StringBuilder();
        if (r.rejected()) {
            md.append("**REJECTED RUN: ")
                    .append(r.rejectionReason())
                    .append(". These figures are not published; ")
                    .append("see below.**\n\n");
        }
        md.append(String.format(
                Locale.ROOT,
                "Machine: %s. Load average %s at the start, %s at the end; %.0f s.%n",
                r.machine().stamp(),
                fmtLoad(r.machine().loadBefore()),
                fmtLoad(r.loadAfter()),
                r.seconds()));
        md.append('\n').append(r.load().markdown());
        double slowest = r.measurements(m -> m.crossesCores() && !Double.isNaN(m.crossCore())).stream()
                .mapToDouble(Measurement::crossCore)
                .max()
                .orElse(Double.NaN);
        if (!Double.isNaN(slowest)) {
            md.append(String.format(
                    Locale.ROOT,
                    "%nCross-core round trip of a cache line, probed after every measured "
                            + "iteration of the workloads where threads hand permits to each other: %.0f ns at the slowest "
                            + "(limit %.0f; close cores 50-100, far ones 400-500).%n",
                    slowest,
                    Measurement.CROSS_CORE_LIMIT_NANOS));
        }
        if (!r.remeasured().isEmpty()) {
            md.append(
                            "\nMeasured again because the cores were far apart, or the measurement unsteady, during an earlier "
                                    + "attempt (the figures below are the last attempt's; every attempt's raw data is in ")
                    .append(json)
                    .append("): ")
                    .append(r.remeasured().stream()
                            .map(m -> String.format(
                                    Locale.ROOT,
                                    "%s %s: was %s %s, %s",
                                    WORKLOADS.getOrDefault(m.benchmark(), m.benchmark()),
                                    m.peer(),
                                    m.score(),
                                    m.unit(),
                                    m.whyMeasuredAgain()))
                            .collect(java.util.stream.Collectors.joining("; ")))
                    .append(".\n");
        }
        if (r.smoke()) {
            md.append("\n**Smoke run: tiny iterations in one JVM, the figures mean nothing")
                    .append(r.load().loaded() ? "; the load limit is not enforced." : ".")
                    .append("**\n");
        }
        return md.toString();
    }

    /** @return the closing table of results.md (and of the fair share's report): every measurement as JMH gave it */
    static String measurements(Report r) {
        StringBuilder md = new StringBuilder();
        md.append("\nAll measurements:\n\n");
        md.append(
                "| workload | peer | score | B/op (-prof gc) | acquisitions that suspended | slowest / fastest iteration "
                        + "| slowest cross-core round trip |\n");
        md.append("|---|---|---:|---:|---|---:|---:|\n");
        for (Map.Entry<String, Map<String, Measurement>> b : r.measured().entrySet()) {
            for (Measurement m : b.getValue().values()) {
                md.append(String.format(
                        Locale.ROOT,
                        "| %s | %s | %s %s | %s | %s | %s | %s |%n",
                        WORKLOADS.getOrDefault(m.benchmark(), m.benchmark()),
                        m.peer(),
                        m.score(),
                        m.unit(),
                        m.bytesPerOp() == null ? "" : m.bytesPerOp().toString(),
                        m.suspendedShare(),
                        Double.isNaN(m.spread())
                                ? ""
                                : String.format(Locale.ROOT, "%.2f%s", m.spread(), m.unsteady() ? " **unsteady**" : ""),
                        Double.isNaN(m.crossCore())
                                ? ""
                                : String.format(
                                        Locale.ROOT, "%.0f ns%s", m.crossCore(), m.farCores() ? " **far**" : "")));
            }
        }
        return md.toString();
    }

    /** @return the lock storm's section of results.md (empty if it neither ran nor was skipped with a note) */
    private static String storm(Report r) {
        List<Measurement> rows = r.stormRows();
        if (rows.isEmpty() && r.notes().isEmpty()) {
            return "";
        }
        StringBuilder md = new StringBuilder();
        md.append("\nLock storm (workload 8): a semaphore of 4 permits; every thread does rounds of acquire(1), a ")
                .append("little CPU work and a yield while holding the permit, release(1) (64 platform threads of ")
                .append(String.format(
                        Locale.ROOT,
                        "%,d rounds, or %,d virtual threads of %,d). ",
                        ManyThreadsBenchmark.PLATFORM_ROUNDS,
                        ManyThreadsBenchmark.VIRTUAL_THREADS,
                        ManyThreadsBenchmark.VIRTUAL_ROUNDS))
                .append(
                        "Per operation: wall time, and CPU time of the whole JVM (getProcessCpuTime, in 10 ms ticks on ")
                .append("Linux); the CPUs kept busy; the time from calling acquire to holding the permit, its 99th ")
                .append("percentile over all operations (mean of the iterations; buckets of 12.5%) and its maximum ")
                .append("(over all iterations). No targets: CPU beyond the work, and the tail, are what to compare.\n");
        for (String note : r.notes()) {
            md.append("\n").append(note).append(".\n");
        }
        if (!rows.isEmpty()) {
            md.append(
                    "\n| threads | peer | JDK | time per op | ops/s | CPU per op | CPUs busy | acquire to granted, p99 | max |\n");
            md.append("|---|---|---|---:|---:|---:|---:|---:|---:|\n");
            for (Measurement m : rows) {
                Storm st = m.storm();
                boolean nanos = m.unit().equals("ns/op");
                md.append(String.format(
                        Locale.ROOT,
                        "| %s | %s | %s | %s %s | %s | %s | %s | %s | %s |%n",
                        m.benchmark().equals(STORM_PLATFORM) ? "64 platform" : "10,000 virtual",
                        m.peer(),
                        st == null ? "" : st.jdk(),
                        m.score(),
                        m.unit(),
                        nanos && m.score().value() > 0
                                ? String.format(
                                        Locale.ROOT, "%,.0f", 1e9 / m.score().value())
                                : "",
                        st == null || st.cpuPerOp() == null ? "" : st.cpuPerOp() + " ns",
                        st == null || Double.isNaN(st.cpus()) ? "" : String.format(Locale.ROOT, "%.2f", st.cpus()),
                        st == null ? "" : duration(st.p99()),
                        st == null ? "" : duration(new Estimate(st.max(), 0))));
            }
        }
        return md.toString();
    }

    /** @return {@code nanos} in ns, µs, ms or s, e.g. {@code "41.7 ± 2.1 ms"} */
    static String duration(Estimate nanos) {
        double v = Math.abs(nanos.value());
        double scale = v < 1e3 ? 1 : v < 1e6 ? 1e3 : v < 1e9 ? 1e6 : 1e9;
        String unit = scale == 1 ? "ns" : scale == 1e3 ? "µs" : scale == 1e6 ? "ms" : "s";
        return new Estimate(nanos.value() / scale, nanos.error() / scale) + " " + unit;
    }

    private static String fmtLoad(double load) {
        return Double.isNaN(load) ? "n/a" : String.format(Locale.ROOT, "%.1f", load);
    }
}
