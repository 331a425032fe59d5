// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.format.OutputFormatFactory;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * How both reports run JMH: the options every run shares (the profilers for allocation, the
 * cross-core probe, the lock storm and the flood; a 1 GB heap; JSON results), what a smoke run
 * changes (every benchmark once, tiny, in this JVM), and the console output wrapped so that the
 * {@link LoadGuard} hears every measured iteration. A run writes its JSON into a staging
 * directory first, one file per JMH run (the first, and every attempt measured again), merged
 * into one at the end; the load is judged before anything is published.
 */
final class JmhRuns {
    private JmhRuns() {}

    /**
     * @return whether any benchmark of this jar matches {@code include} and not {@code exclude}
     *     (JMH refuses a run with none)
     */
    static boolean anyBenchmark(String include, String exclude) {
        return !org.openjdk.jmh.runner.BenchmarkList.defaultList()
                .find(
                        OutputFormatFactory.createFormatInstance(System.out, VerboseMode.SILENT),
                        List.of(include),
                        exclude == null ? List.of() : List.of(exclude))
                .isEmpty();
    }

    /**
     * Runs JMH on the benchmarks matching {@code include} (and not {@code exclude}, if given), in
     * the configurations with {@code params} ({@code @Param} name → value; {@code null}: all), with
     * their forks on {@code jvm} (a {@code java} binary) or on this JVM's, writing JMH's JSON to
     * {@code json}.
     */
    static Collection<RunResult> runJmh(
            Settings settings,
            String include,
            String exclude,
            Map<String, String> params,
            String jvm,
            Path json,
            LoadGuard guard)
            throws RunnerException {
        ChainedOptionsBuilder options = new OptionsBuilder()
                .include(include)
                .addProfiler(GCProfiler.class)
                .addProfiler(CrossCoreProbe.class)
                .addProfiler(ManyThreadsProfiler.class)
                .addProfiler(FairShareFloodProfiler.class)
                .shouldFailOnError(true)
                .result(json.toString())
                .resultFormat(ResultFormatType.JSON)
                .jvmArgsAppend("-Xms1g", "-Xmx1g", "-Djava.awt.headless=true");
        if (exclude != null) {
            options.exclude(exclude);
        }
        if (jvm != null) {
            options.jvm(jvm);
        }
        if (settings.smoke) {
            // Every benchmark once, in this JVM (in one fork if it needs another JVM), for a few
            // milliseconds (a storm: one invocation): it must run, nothing more.
            options.forks(jvm == null ? 0 : 1)
                    .verbosity(VerboseMode.SILENT)
                    .warmupIterations(0)
                    .measurementIterations(1)
                    .measurementTime(TimeValue.milliseconds(20));
        } else if (settings.forks >= 0) {
            options.forks(jvm == null ? settings.forks : Math.max(1, settings.forks)); // another JVM needs a fork
        }
        if (params != null) {
            params.forEach(options::param);
        }
        // JMH's console output, as new Runner(options) would make it, wrapped to hear the measured
        // iterations (also those of the forks, which report them to this JVM).
        VerboseMode verbosity = settings.smoke ? VerboseMode.SILENT : VerboseMode.NORMAL;
        return new Runner(
                        options.build(),
                        guard.watching(OutputFormatFactory.createFormatInstance(System.out, verbosity)))
                .run();
    }

    /**
     * Writes the JMH JSON arrays {@code parts} (those that exist) as one array into {@code merged};
     * returns it (or the only part, unmerged).
     */
    static Path mergeJson(List<Path> parts, Path merged) throws IOException {
        List<Path> present = parts.stream().filter(Files::exists).toList();
        if (present.size() <= 1) {
            return parts.get(0);
        }
        List<String> bodies = new ArrayList<>();
        for (Path part : present) {
            String text = Files.readString(part).strip();
            if (!text.startsWith("[") || !text.endsWith("]")) {
                throw new IOException(part + ": not a JMH JSON array");
            }
            String body = text.substring(1, text.length() - 1).strip();
            if (!body.isEmpty()) {
                bodies.add(body);
            }
        }
        Files.writeString(merged, "[\n" + String.join(",\n", bodies) + "\n]\n");
        return merged;
    }

    /** Deletes a run's staging directory (JMH's JSON files as it wrote them) and all in it. */
    static void deleteStaging(Path staging) throws IOException {
        try (Stream<Path> files = Files.walk(staging)) {
            for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
