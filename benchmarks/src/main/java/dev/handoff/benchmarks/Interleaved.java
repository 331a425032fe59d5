// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The coroutine workload (3) for several peers in <b>one JVM, in alternating blocks</b>: a
 * cross-check of JMH's ratio that a noisy host cannot skew. JMH measures one peer after the
 * other, so a minute in which the VM's cores are far apart and every such workload runs 2-3 times
 * slower (see {@link CrossCoreProbe} and docs/performance.md, "Method") lands on one peer only and moves the ratio. Here each block
 * times every peer for a fraction of a second, in an order that rotates from block to block, and
 * divides each peer's time by the baseline's time <em>of the same block</em>; the median of those
 * per-block ratios over many blocks hardly moves when a few blocks fall into a slow minute.
 * It is a supplement to JMH, not a replacement: no forks, JIT state shared by the peers.
 *
 * <pre>{@code
 * ./bench.sh interleave                      # 150 blocks (about 25 s), handoff and the diagnostic against kotlinx
 * ./bench.sh interleave --blocks 200
 * ./bench.sh interleave --start launch      # workload 3b: the tasks launched, no handler on their Jobs
 * }</pre>
 */
public final class Interleaved {
    /** The peers of a default run; the first is the baseline. */
    static final List<String> PEERS = List.of(Peers.KOTLINX, Peers.HANDOFF, Peers.HANDOFF_UNCANCELLABLE);

    private static final long[] ONE = {1};

    private Interleaved() {}

    /**
     * One peer's result.
     *
     * @param peer        the peer
     * @param nanos       the median over blocks of its time per acquisition, in ns
     * @param ratio       the median over blocks of its time / the baseline's in the same block
     * @param ratioLow    the first quartile of those ratios
     * @param ratioHigh   the third quartile of those ratios
     */
    public record Result(String peer, double nanos, double ratio, double ratioLow, double ratioHigh) {
        /**
         * @param baseline the baseline's name
         * @return one line: the peer, its median time, its median ratio to the baseline and the quartiles
         */
        public String describe(String baseline) {
            return String.format(
                    Locale.ROOT,
                    "%-22s %7.0f ns/acquisition   / %s: median %.3f (quartiles %.3f - %.3f)",
                    peer,
                    nanos,
                    baseline,
                    ratio,
                    ratioLow,
                    ratioHigh);
        }
    }

    /**
     * Runs the comparison.
     *
     * @param peers          the peers, the first is the baseline; at least two, no repeats
     * @param blocks         how many blocks (at least 1)
     * @param roundsPerBlock rounds of {@link CoroutineRounds#run} (2,000 acquisitions each) per peer per block
     * @param warmupRounds   rounds of each peer before the first block
     * @param start          how each round starts its tasks (workload 3 or 3b)
     * @return one result per peer, in the order given (the baseline's ratios are all 1)
     * @throws IllegalArgumentException if an argument is out of range or a peer is unknown or cannot suspend
     */
    public static List<Result> run(
            List<String> peers, int blocks, int roundsPerBlock, int warmupRounds, CoroutineRounds.Start start) {
        if (peers.size() < 2 || peers.stream().distinct().count() != peers.size()) {
            throw new IllegalArgumentException("run(peers=" + peers + "): need at least two different peers");
        }
        if (blocks < 1 || roundsPerBlock < 1 || warmupRounds < 0) {
            throw new IllegalArgumentException("run(blocks=" + blocks + ", roundsPerBlock=" + roundsPerBlock
                    + ", warmupRounds=" + warmupRounds + "): blocks and rounds must be positive, warm-up not negative");
        }
        int n = peers.size();
        List<SuspendingPermits> permits = new ArrayList<>();
        for (String peer : peers) {
            permits.add(Peers.suspending(peer, 2));
        }
        for (int w = 0; w < warmupRounds; w++) {
            for (SuspendingPermits p : permits) {
                round(p, start);
            }
        }
        double[][] nanos = new double[n][blocks];
        for (int b = 0; b < blocks; b++) {
            for (int k = 0; k < n; k++) {
                int i = (b + k) % n; // rotate the order, so no peer always follows the same one
                long began = System.nanoTime();
                for (int r = 0; r < roundsPerBlock; r++) {
                    round(permits.get(i), start);
                }
                nanos[i][b] = (System.nanoTime() - began) / (roundsPerBlock * (double) acquisitionsPerRound());
            }
        }
        List<Result> results = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            double[] ratios = new double[blocks];
            for (int b = 0; b < blocks; b++) {
                ratios[b] = nanos[i][b] / nanos[0][b];
            }
            Arrays.sort(ratios);
            double[] own = nanos[i].clone();
            Arrays.sort(own);
            results.add(new Result(
                    peers.get(i),
                    quantile(own, 0.5),
                    quantile(ratios, 0.5),
                    quantile(ratios, 0.25),
                    quantile(ratios, 0.75)));
        }
        return results;
    }

    /** @return the acquisitions of one round (8 tasks of 250, as {@link CoroutineContendedBenchmark}) */
    static int acquisitionsPerRound() {
        return CoroutineContendedBenchmark.TASKS * CoroutineContendedBenchmark.ACQUISITIONS_PER_TASK;
    }

    private static void round(SuspendingPermits p, CoroutineRounds.Start start) {
        CoroutineRounds.run(
                p,
                CoroutineContendedBenchmark.TASKS,
                CoroutineContendedBenchmark.ACQUISITIONS_PER_TASK,
                ONE,
                CoroutineContendedBenchmark.WORK,
                start);
    }

    /** Linear interpolation between the closest ranks of a sorted array. */
    static double quantile(double[] sorted, double q) {
        double pos = q * (sorted.length - 1);
        int lo = (int) Math.floor(pos);
        int hi = Math.min(lo + 1, sorted.length - 1);
        return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
    }

    /**
     * {@code interleave [--blocks N] [--peers a,b,c] [--start async|launch]}: runs and prints the comparison.
     *
     * @param args the command line after {@code interleave}
     * @throws IllegalArgumentException on an unknown option or a bad value
     */
    static void main(String[] args) {
        Map<String, String> options = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (!List.of("--blocks", "--peers", "--start").contains(args[i]) || i + 1 >= args.length) {
                throw new IllegalArgumentException("interleave: unknown option or missing value at '" + args[i]
                        + "'; usage: interleave [--blocks N] [--peers baseline,peer,...] [--start async|launch]");
            }
            options.put(args[i], args[i + 1]);
        }
        int blocks = Integer.parseInt(options.getOrDefault("--blocks", "150"));
        List<String> peers =
                options.containsKey("--peers") ? List.of(options.get("--peers").split(",")) : PEERS;
        CoroutineRounds.Start start = switch (options.getOrDefault("--start", "async")) {
            case "async" -> CoroutineRounds.Start.ASYNC_AWAIT_ALL;
            case "launch" -> CoroutineRounds.Start.LAUNCH;
            default ->
                throw new IllegalArgumentException("interleave --start " + options.get("--start")
                        + ": must be async (workload 3, async + awaitAll) or launch (3b)");
        };
        System.out.printf(
                Locale.ROOT,
                "# coroutine workload (8 tasks, 2 permits, yield inside; tasks started %s), %d "
                        + "alternating blocks of 60 rounds x 2,000 acquisitions per peer, baseline %s%n",
                start == CoroutineRounds.Start.LAUNCH ? "by launch, 3b" : "by async + awaitAll, 3",
                blocks,
                peers.get(0));
        for (Result r : run(peers, blocks, 60, 300, start)) {
            System.out.println(r.describe(peers.get(0)));
        }
    }
}
