// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;

/**
 * The lock storm's figures beyond the time per operation (workload 8), from
 * {@link ManyThreadsProfiler}: what a {@link Measurement} of a storm carries besides its score,
 * for the storm's own table in results.md.
 *
 * @param cpuPerOp the CPU time of the whole JVM per operation, ns, or {@code null} if the platform
 *                 does not say
 * @param cpus     the CPUs kept busy on average (CPU time over wall time), or NaN if not known
 * @param p99      the 99th percentile of the time from calling acquire to holding the permit, ns
 *                 (the mean over the iterations, with its error bar)
 * @param max      the longest such time in any measured iteration, ns
 * @param jdk      the JDK version the forks ran on
 */
public record Storm(Estimate cpuPerOp, double cpus, Estimate p99, double max, String jdk) {
    /** @return the storm figures of a JMH run, or {@code null} if it has none (not a storm, or no profiler) */
    static Storm of(RunResult run) {
        var secondary = run.getSecondaryResults(); // JMH declares a raw Map<String, Result>
        Result<?> p99 = secondary.get(ManyThreadsProfiler.P99);
        Result<?> max = secondary.get(ManyThreadsProfiler.MAX);
        if (p99 == null || max == null) {
            return null;
        }
        Result<?> cpu = secondary.get(ManyThreadsProfiler.CPU);
        Result<?> cpus = secondary.get(ManyThreadsProfiler.CPUS);
        return new Storm(
                cpu == null ? null : new Estimate(cpu.getScore(), cpu.getScoreError()),
                cpus == null ? Double.NaN : cpus.getScore(),
                new Estimate(p99.getScore(), p99.getScoreError()),
                max.getScore(),
                run.getParams().getJdkVersion());
    }
}
