// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.nio.file.Path;

/**
 * What to run and where to write: the command line of the benchmark report, parsed, with its
 * defaults and its usage text. The fair share's report ({@link FairShareReport#settings}) takes
 * the same options with other defaults and a few left out, so both share this one parser.
 */
final class Settings {
    /** The usage lines of {@code --retries} and {@code --close-wait}, which both reports take. */
    static final String RETRY_OPTIONS = String.join(
            "\n",
            "  --retries N    measure again, up to N times, what was measured while the cores were far apart or",
            "                 came out unsteady, each time once the cores have been close for three probes in a row,",
            "                 5 s apart (default 3)",
            "  --close-wait S wait at most S seconds for close cores before such an attempt (default 600)");

    static final String USAGE = String.join(
            "\n",
            "usage: java -jar benchmarks.jar [--smoke] [--out DIR] [--rejected-out DIR] [--waiters N] [--include REGEX] [--forks N]",
            "       java -jar benchmarks.jar interleave [--blocks N] [--peers baseline,peer,...]   (workload 3 in alternating blocks, one JVM)",
            "       java -jar benchmarks.jar fairshare [--smoke] [--out DIR] ...   (the fair share's benchmarks alone; "
                    + "writes fair-share.md; --help there)",
            "       java -jar benchmarks.jar jmh <JMH arguments>     (JMH's own command line, e.g. -prof stack)",
            "  --smoke        every benchmark once with tiny iterations in this JVM (seconds; figures meaningless)",
            "  --out DIR      where results.md, jmh-results.json and benchmarks.png go (default docs/benchmarks)",
            "  --rejected-out DIR  where they go instead, with exit status 3, if other processes used more than",
            "                 0.25 CPU during a measured iteration (default benchmarks/target/rejected-run; not for --smoke)",
            "  --waiters N    suspended coroutines for the footprint (default 1000000, smoke 10000; 0 skips it)",
            "  --include RE   JMH include pattern (default: every benchmark of this module)",
            "  --forks N      override the forks of every benchmark (default: the annotations, 2)",
            RETRY_OPTIONS,
            "  --virtual-jvm P the java binary (or JDK home) whose forks run the 10,000-virtual-thread storm; 'none' skips it",
            "                 (default: this JVM if it has virtual threads, else the newest JDK 21+ beside it, else skipped)",
            "  --redraw       rewrite results.md and benchmarks.png in --out from its results.tsv, run nothing");

    boolean smoke;
    boolean redraw;
    Path out = Path.of("docs", "benchmarks");
    Path rejectedOut = Path.of("benchmarks", "target", "rejected-run");
    int waiters = -1;
    /**
     * Every comparison benchmark of the report; the fair share's (FairShareBenchmark and
     * FairShareFloodBenchmark, with their own smoke tests) are run on their own, by
     * {@link FairShareReport}, not in this report.
     */
    String include = "dev\\.handoff\\.benchmarks\\.(?!FairShare).*Benchmark\\..*";

    int forks = -1;
    int retries = 3;
    long closeWaitSeconds = 600;
    /** {@code --virtual-jvm}: a java binary or JDK home for the virtual-thread storm, "none", or null (find one). */
    String virtualJvm;

    /**
     * @return the settings, or {@code null} for {@code --help}
     * @throws IllegalArgumentException on an unknown or incomplete argument
     */
    static Settings parse(String... args) {
        return parse(new Settings(), args);
    }

    /**
     * @param s    the defaults, which the arguments override (changed and returned)
     * @param args the command line
     * @return {@code s}, or {@code null} for {@code --help}
     * @throws IllegalArgumentException on an unknown or incomplete argument
     */
    static Settings parse(Settings s, String... args) {
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--help", "-h" -> {
                    return null;
                }
                case "--smoke" -> s.smoke = true;
                case "--redraw" -> s.redraw = true;
                case "--out" -> s.out = Path.of(value(args, ++i, arg));
                case "--rejected-out" -> s.rejectedOut = Path.of(value(args, ++i, arg));
                case "--waiters" -> s.waiters = Integer.parseInt(value(args, ++i, arg));
                case "--include" -> s.include = value(args, ++i, arg);
                case "--forks" -> s.forks = Integer.parseInt(value(args, ++i, arg));
                case "--retries" -> s.retries = (int) atLeastZero(arg, Integer.parseInt(value(args, ++i, arg)));
                case "--close-wait" -> s.closeWaitSeconds = atLeastZero(arg, Long.parseLong(value(args, ++i, arg)));
                case "--virtual-jvm" -> s.virtualJvm = value(args, ++i, arg);
                default -> throw new IllegalArgumentException("unknown argument '" + arg + "'\n" + USAGE);
            }
        }
        if (s.waiters < 0) {
            s.waiters = s.smoke ? 10_000 : 1_000_000;
        }
        return s;
    }

    private static long atLeastZero(String name, long value) {
        if (value < 0) {
            throw new IllegalArgumentException(name + " " + value + ": must be 0 or more\n" + USAGE);
        }
        return value;
    }

    private static String value(String[] args, int i, String name) {
        if (i >= args.length) {
            throw new IllegalArgumentException(name + " needs a value\n" + USAGE);
        }
        return args[i];
    }
}
