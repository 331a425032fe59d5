// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.Locale;

/**
 * What the figures were taken on: CPU, cores, OS, JDK, date and the load average (other work on
 * the machine), for the chart and the README.
 *
 * @param cpu        the CPU model, from {@code /proc/cpuinfo} where there is one
 * @param cores      {@code Runtime.availableProcessors()}
 * @param os         OS name and version
 * @param jdk        vendor and runtime version
 * @param date       the day of the run
 * @param loadBefore the 1-minute load average when the run started (NaN if unknown)
 */
public record Machine(String cpu, int cores, String os, String jdk, LocalDate date, double loadBefore) {

    /** @return this machine, now */
    public static Machine current() {
        return new Machine(
                cpuModel(),
                Runtime.getRuntime().availableProcessors(),
                System.getProperty("os.name") + " " + System.getProperty("os.version"),
                System.getProperty("java.vm.vendor") + " " + System.getProperty("java.runtime.version"),
                LocalDate.now(),
                loadAverage());
    }

    /** @return the 1-minute load average now, NaN if the OS does not tell */
    public static double loadAverage() {
        double load = ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
        return load < 0 ? Double.NaN : load;
    }

    /** @return one line: CPU, cores, JDK, date */
    public String stamp() {
        return String.format(Locale.ROOT, "%s, %d cores, %s, JDK %s, %s", cpu, cores, os, jdk, date);
    }

    private static String cpuModel() {
        try {
            Path cpuinfo = Path.of("/proc/cpuinfo");
            if (Files.isReadable(cpuinfo)) {
                for (String line : Files.readAllLines(cpuinfo)) {
                    if (line.startsWith("model name")) {
                        return line.substring(line.indexOf(':') + 1).trim();
                    }
                }
            }
        } catch (IOException e) {
            // fall through: the architecture is the best we know
        }
        return System.getProperty("os.arch");
    }
}
