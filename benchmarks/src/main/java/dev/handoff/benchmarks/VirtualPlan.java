// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where the virtual-thread storm ({@link BenchmarkReport#STORM_VIRTUAL}) runs: in this JVM and its
 * forks ({@code here}), in forks on another {@code java} binary, or nowhere. This module is
 * compiled for Java 17 and the rest of the suite runs on whatever JVM runs the report; virtual
 * threads need JDK 21+, so the plan is the one place that decides, and its note says so in the
 * console and in results.md.
 *
 * @param here whether this JVM can run it (the forks use this JVM's java)
 * @param java the {@code java} binary its forks run on instead, or {@code null}
 * @param note for the console and results.md, where it ran or why not; empty if here
 */
record VirtualPlan(boolean here, String java, String note) {
    /**
     * {@code --virtual-jvm none}: not run. {@code --virtual-jvm PATH}: on that java (or JDK home).
     * Otherwise here if this JVM has virtual threads, else on the newest JDK 21+ installed beside
     * this one ({@link VirtualThreads#javaBeside()}), else not run.
     *
     * @throws IllegalArgumentException if {@code --virtual-jvm} names no java binary
     */
    static VirtualPlan of(Settings settings) {
        String label = BenchmarkReport.WORKLOADS.get(BenchmarkReport.STORM_VIRTUAL);
        String current = "this JVM, JDK " + Runtime.version();
        if ("none".equals(settings.virtualJvm)) {
            return new VirtualPlan(false, null, label + ": not run (--virtual-jvm none)");
        }
        if (settings.virtualJvm != null) {
            Path binary = Path.of(settings.virtualJvm);
            if (Files.isDirectory(binary)) {
                binary = binary.resolve("bin").resolve("java");
            }
            if (!Files.isExecutable(binary)) {
                throw new IllegalArgumentException("--virtual-jvm " + settings.virtualJvm + ": no java binary there");
            }
            return new VirtualPlan(
                    false,
                    binary.toString(),
                    label + ": run in forks on " + binary + " (--virtual-jvm); everything else on " + current);
        }
        if (VirtualThreads.available()) {
            return new VirtualPlan(true, null, "");
        }
        java.util.Optional<Path> beside = VirtualThreads.javaBeside();
        if (beside.isPresent()) {
            return new VirtualPlan(
                    false,
                    beside.get().toString(),
                    label + ": run in forks on " + beside.get()
                            + ", a JDK " + VirtualThreads.FIRST_FEATURE + "+ found beside this one (" + current
                            + ", has no virtual threads); everything else on " + current);
        }
        return new VirtualPlan(
                false,
                null,
                label + ": NOT RUN: " + current + " has no virtual threads and no JDK " + VirtualThreads.FIRST_FEATURE
                        + "+ was found beside it; pass --virtual-jvm /path/to/jdk/bin/java");
    }
}
