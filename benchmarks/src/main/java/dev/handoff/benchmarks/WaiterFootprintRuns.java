// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import static dev.handoff.benchmarks.BenchmarkReport.FOOTPRINT;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Workload 6, the bytes per suspended waiter, as the benchmark report measures it: each peer's
 * {@link WaiterFootprint} in a fresh JVM with a stop-the-world collector (ParallelGC), so that the
 * live heap after full collections holds the waiters and little else, alternating the peers and
 * twice each; a smoke run measures once each in this JVM. It is no JMH benchmark: JMH measures
 * time and allocation rate, not what stays live.
 */
final class WaiterFootprintRuns {
    private WaiterFootprintRuns() {}

    /**
     * Workload 6. Full run: fresh JVMs with a stop-the-world collector, alternating the peers, two
     * runs each. Smoke run: once each in this JVM. Puts the measurements into {@code measured}.
     */
    static void measure(Settings settings, Map<String, Map<String, Measurement>> measured)
            throws IOException, InterruptedException {
        List<String> peers = List.of(WaiterFootprint.BASELINE, Peers.HANDOFF, Peers.KOTLINX);
        Map<String, List<Double>> samples = new LinkedHashMap<>();
        int repeats = settings.smoke ? 1 : 2;
        for (int i = 0; i < repeats; i++) {
            for (String peer : peers) {
                double bytes = settings.smoke
                        ? WaiterFootprint.bytesPerWaiter(peer, settings.waiters)
                        : footprintInFreshJvm(peer, settings.waiters);
                System.out.printf(
                        Locale.ROOT, "# footprint %s, %,d waiters: %.1f B/waiter%n", peer, settings.waiters, bytes);
                samples.computeIfAbsent(peer, k -> new ArrayList<>()).add(bytes);
            }
        }
        Map<String, Measurement> whole = new LinkedHashMap<>();
        for (String peer : peers) {
            whole.put(
                    peer,
                    new Measurement(
                            FOOTPRINT,
                            peer,
                            spread(samples.get(peer)),
                            "B/waiter",
                            null,
                            -1,
                            -1,
                            Double.NaN,
                            Double.NaN));
        }
        measured.put(FOOTPRINT, whole);
    }

    private static double footprintInFreshJvm(String peer, int waiters) throws IOException, InterruptedException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process process = new ProcessBuilder(
                        java.toString(),
                        "-XX:+UseParallelGC",
                        "-Xms2g",
                        "-Xmx2g",
                        "-cp",
                        System.getProperty("java.class.path"),
                        WaiterFootprint.class.getName(),
                        peer,
                        Integer.toString(waiters))
                .redirectErrorStream(true)
                .start();
        String result = null;
        StringBuilder output = new StringBuilder();
        try (BufferedReader in =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                output.append(line).append('\n');
                if (line.startsWith("footprint ")) {
                    result = line;
                }
            }
        }
        if (!process.waitFor(10, TimeUnit.MINUTES) || process.exitValue() != 0 || result == null) {
            throw new IOException("footprint JVM for " + peer + " failed:\n" + output);
        }
        String[] parts = result.split(" ");
        return Double.parseDouble(parts[3]);
    }

    /** The mean of the samples, with half their range as the error bar. */
    private static Estimate spread(List<Double> samples) {
        double sum = 0;
        double min = Double.POSITIVE_INFINITY;
        double max = Double.NEGATIVE_INFINITY;
        for (double s : samples) {
            sum += s;
            min = Math.min(min, s);
            max = Math.max(max, s);
        }
        return new Estimate(sum / samples.size(), (max - min) / 2);
    }
}
