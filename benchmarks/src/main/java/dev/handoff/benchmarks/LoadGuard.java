// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.IterationType;
import org.openjdk.jmh.runner.format.OutputFormat;

/**
 * Watches the load of other processes while the benchmarks measure: one {@link OtherLoad.Window}
 * per measured JMH iteration (warm-up is not watched), from a {@code /proc} snapshot when JMH
 * announces the iteration and one when it reports its result, plus one window over the whole run.
 * JMH's iteration and result calls reach the report JVM's {@link OutputFormat} from the forks too,
 * so {@link #watching(OutputFormat)} wraps the console output to hear them.
 *
 * <pre>{@code
 * LoadGuard guard = LoadGuard.start();
 * new Runner(options, guard.watching(console)).run();
 * OtherLoad.Summary load = guard.finish();
 * }</pre>
 *
 * <p>Without a readable {@code /proc/stat} (not Linux), it records nothing and
 * {@link #finish()} says so.
 */
final class LoadGuard {
    private final Path proc;
    private final long self;
    private final OtherLoad.Snapshot runStart;
    private final List<OtherLoad.Window> windows = new ArrayList<>();
    /** Measured iterations announced so far per benchmark and parameters, to number the forks. */
    private final Map<String, Integer> forks = new HashMap<>();

    /** The snapshot at the start of the current measured iteration, or null. Guarded by this. */
    private OtherLoad.Snapshot iterationStart;
    /** Its label. Guarded by this. */
    private String iterationLabel;

    private LoadGuard(Path proc, long self, OtherLoad.Snapshot runStart) {
        this.proc = proc;
        this.self = self;
        this.runStart = runStart;
    }

    /** @return a guard over this JVM and its descendants, started now */
    static LoadGuard start() {
        return start(Path.of("/proc"), ProcessHandle.current().pid());
    }

    /**
     * @param proc {@code /proc}, or a directory laid out like it
     * @param self the pid whose family is ours
     * @return a guard started now; one that measures nothing if {@code proc/stat} cannot be read
     */
    static LoadGuard start(Path proc, long self) {
        OtherLoad.Snapshot first = null;
        if (Files.isReadable(proc.resolve("stat"))) {
            try {
                first = OtherLoad.Snapshot.read(proc, System.nanoTime());
            } catch (IOException | IllegalArgumentException e) {
                System.err.println(
                        "# load guard: cannot read " + proc + ": " + e + "; load of other processes not measured");
            }
        }
        return new LoadGuard(proc, self, first);
    }

    /**
     * Opens a window; a window still open is dropped.
     *
     * @param label what is measured in it
     */
    synchronized void begin(String label) {
        iterationStart = snapshot();
        iterationLabel = label;
    }

    /** Closes the open window, if any, and records it. */
    synchronized void end() {
        OtherLoad.Snapshot start = iterationStart;
        iterationStart = null;
        OtherLoad.Snapshot now = start == null ? null : snapshot();
        if (now != null) {
            windows.add(OtherLoad.between(iterationLabel, start, now, self));
        }
    }

    /** @return the windows recorded so far */
    synchronized List<OtherLoad.Window> windows() {
        return List.copyOf(windows);
    }

    /** @return whether other processes loaded a measured iteration so far (see {@link OtherLoad.Window#overThreshold()}) */
    synchronized boolean loaded() {
        return windows.stream().anyMatch(OtherLoad.Window::overThreshold);
    }

    /** @return what the run found, the whole run being the time since {@link #start()} */
    synchronized OtherLoad.Summary finish() {
        OtherLoad.Snapshot now = snapshot();
        if (now == null) {
            return OtherLoad.Summary.unmeasured();
        }
        return OtherLoad.Summary.of(
                windows, OtherLoad.between("the whole run", runStart, now, self).otherCpus());
    }

    private OtherLoad.Snapshot snapshot() {
        if (runStart == null) {
            return null;
        }
        try {
            return OtherLoad.Snapshot.read(proc, System.nanoTime());
        } catch (IOException | IllegalArgumentException e) {
            return null;
        }
    }

    /**
     * @param console JMH's own output, to which every call is passed on
     * @return an output that also opens a window at each measured iteration and closes it at its result
     */
    OutputFormat watching(OutputFormat console) {
        return new OutputFormat() {
            @Override
            public void iteration(BenchmarkParams benchParams, IterationParams params, int iteration) {
                if (params.getType() == IterationType.MEASUREMENT) {
                    begin(label(benchParams, params, iteration));
                }
                console.iteration(benchParams, params, iteration);
            }

            @Override
            public void iterationResult(
                    BenchmarkParams benchParams, IterationParams params, int iteration, IterationResult data) {
                if (params.getType() == IterationType.MEASUREMENT) {
                    end();
                }
                console.iterationResult(benchParams, params, iteration, data);
            }

            @Override
            public void startBenchmark(BenchmarkParams benchParams) {
                console.startBenchmark(benchParams);
            }

            @Override
            public void endBenchmark(BenchmarkResult result) {
                console.endBenchmark(result);
            }

            @Override
            public void startRun() {
                console.startRun();
            }

            @Override
            public void endRun(Collection<RunResult> result) {
                console.endRun(result);
            }

            @Override
            public void print(String s) {
                console.print(s);
            }

            @Override
            public void println(String s) {
                console.println(s);
            }

            @Override
            public void flush() {
                console.flush();
            }

            @Override
            public void close() {
                // The console writes to System.out, which must stay open after the run.
                console.flush();
            }

            @Override
            public void verbosePrintln(String s) {
                console.verbosePrintln(s);
            }

            @Override
            public void write(int b) {
                console.write(b);
            }

            @Override
            public void write(byte[] b) throws IOException {
                console.write(b);
            }
        };
    }

    /** e.g. "BlockingContendedBenchmark.threads8 [peer=juc-fair, work=50], fork 2, iteration 3 of 5" */
    private synchronized String label(BenchmarkParams benchParams, IterationParams params, int iteration) {
        String name = benchParams.getBenchmark();
        name = name.substring(name.lastIndexOf('.', name.lastIndexOf('.') - 1) + 1);
        List<String> values = new ArrayList<>();
        for (String key : benchParams.getParamsKeys()) {
            values.add(key + "=" + benchParams.getParam(key));
        }
        String benchmark = values.isEmpty() ? name : name + " " + values;
        int fork = iteration == 1 ? forks.merge(benchmark, 1, Integer::sum) : forks.getOrDefault(benchmark, 1);
        return benchmark + ", fork " + fork + ", iteration " + iteration + " of " + params.getCount();
    }
}
