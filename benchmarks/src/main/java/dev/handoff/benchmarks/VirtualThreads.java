// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Virtual threads for a module compiled for Java 17: {@code Thread.ofVirtual().unstarted(r)}
 * found through {@link MethodHandles} at run time, so the same jar makes them on JDK 21 and later
 * and says clearly why not on an older one. Also finds a JDK 21+ installed beside the running
 * one, on which the report runs the virtual-thread storm when it runs on JDK 17 itself.
 *
 * <pre>{@code
 * if (VirtualThreads.available()) {
 *     Thread t = VirtualThreads.unstarted(() -> work());
 *     t.start();
 * }
 * }</pre>
 */
public final class VirtualThreads {
    /** The first JDK with virtual threads as a final feature. */
    static final int FIRST_FEATURE = 21;

    /** {@code Thread.Builder.unstarted(Runnable)} on a fresh {@code Thread.ofVirtual()}, or null. */
    private static final MethodHandle OF_VIRTUAL;

    private static final MethodHandle UNSTARTED;
    /** Why this JVM cannot make virtual threads, or null if it can. */
    private static final String UNAVAILABLE;

    static {
        MethodHandle ofVirtual = null;
        MethodHandle unstarted = null;
        String why = null;
        try {
            Class<?> builder = Class.forName("java.lang.Thread$Builder");
            Class<?> ofVirtualType = Class.forName("java.lang.Thread$Builder$OfVirtual");
            MethodHandles.Lookup lookup = MethodHandles.publicLookup();
            ofVirtual = lookup.findStatic(Thread.class, "ofVirtual", MethodType.methodType(ofVirtualType))
                    .asType(MethodType.methodType(Object.class));
            unstarted = lookup.findVirtual(builder, "unstarted", MethodType.methodType(Thread.class, Runnable.class))
                    .asType(MethodType.methodType(Thread.class, Object.class, Runnable.class));
            Object probe = ofVirtual.invokeExact(); // JDK 19-20 without --enable-preview throw here
            Thread t = (Thread) unstarted.invokeExact(probe, (Runnable) () -> {});
            if (t == null) {
                why = "Thread.ofVirtual().unstarted(r) gave null";
            }
        } catch (Throwable e) {
            why = e.toString();
        }
        UNAVAILABLE = why == null
                ? null
                : "virtual threads need JDK " + FIRST_FEATURE + " or later; this JVM is " + Runtime.version() + " ("
                        + System.getProperty("java.home") + "): " + why;
        OF_VIRTUAL = why == null ? ofVirtual : null;
        UNSTARTED = why == null ? unstarted : null;
    }

    private VirtualThreads() {}

    /** @return whether this JVM makes virtual threads */
    public static boolean available() {
        return UNAVAILABLE == null;
    }

    /** @return why this JVM cannot make virtual threads, or empty if it can */
    public static Optional<String> unavailableReason() {
        return Optional.ofNullable(UNAVAILABLE);
    }

    /**
     * @param task what the thread runs
     * @return a new virtual thread, not started
     * @throws UnsupportedOperationException if this JVM has no virtual threads (the message says
     *     which JVM this is and how to run on another)
     */
    public static Thread unstarted(Runnable task) {
        if (UNAVAILABLE != null) {
            throw new UnsupportedOperationException(UNAVAILABLE + ". With plain JMH, run this benchmark's forks on a "
                    + "JDK " + FIRST_FEATURE + "+ with -jvm /path/to/jdk/bin/java; the report does that by itself "
                    + "(--virtual-jvm)");
        }
        try {
            return (Thread) UNSTARTED.invokeExact(OF_VIRTUAL.invokeExact(), task);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException("Thread.ofVirtual().unstarted(r) failed", e);
        }
    }

    /**
     * Looks for a JDK with virtual threads installed beside the running one: the directories next to
     * {@code java.home} (e.g. the others under {@code /usr/lib/jvm}) whose {@code release} file says
     * {@code JAVA_VERSION} {@value #FIRST_FEATURE} or later and that have {@code bin/java}. The
     * newest wins.
     *
     * @return its {@code bin/java}, or empty if none
     */
    public static Optional<Path> javaBeside() {
        Path home = Path.of(System.getProperty("java.home")).toAbsolutePath();
        Path parent = home.getParent();
        if (parent == null || !Files.isDirectory(parent)) {
            return Optional.empty();
        }
        try (Stream<Path> dirs = Files.list(parent)) {
            List<Path> sorted = dirs.sorted().toList();
            return sorted.stream()
                    .filter(d -> feature(d) >= FIRST_FEATURE
                            && Files.isExecutable(d.resolve("bin").resolve("java")))
                    .max(Comparator.comparingInt(VirtualThreads::feature))
                    .map(d -> d.resolve("bin").resolve("java"));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /**
     * @param jdk a JDK's home
     * @return the feature release its {@code release} file names ({@code JAVA_VERSION="25.0.1"}: 25), or -1
     */
    static int feature(Path jdk) {
        Path release = jdk.resolve("release");
        if (!Files.isReadable(release)) {
            return -1;
        }
        try {
            for (String line : Files.readAllLines(release)) {
                if (line.startsWith("JAVA_VERSION=")) {
                    String v = line.substring("JAVA_VERSION=".length())
                            .replace("\"", "")
                            .trim();
                    int end = 0;
                    while (end < v.length() && Character.isDigit(v.charAt(end))) {
                        end++;
                    }
                    return end == 0 ? -1 : Integer.parseInt(v.substring(0, end));
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }
}
