// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.util.Locale;

/**
 * One row of the report: ours against one peer on one metric, the ratio ours / peer (same run),
 * and the target for it, if any.
 *
 * @param workload  e.g. {@code "2. blocking, 8 threads, 2 permits"}
 * @param metric    e.g. {@code "ns/op"}, {@code "ops/µs"}, {@code "B/op"}
 * @param peer      the peer's name, see {@link Peers}
 * @param ours      our value
 * @param theirs    the peer's value
 * @param target    the target on the ratio, or {@code null} for information only
 * @param lowerIsBetter whether a smaller value of the metric is better (time, bytes) or not (throughput)
 */
public record Comparison(
        String workload,
        String metric,
        String peer,
        Estimate ours,
        Estimate theirs,
        Target target,
        boolean lowerIsBetter) {

    /** @return ours / peer, with its error bar */
    public Estimate ratio() {
        return ours.divide(theirs);
    }

    /**
     * The ratio expressed as "our time per operation / the peer's", whatever the metric, so that
     * every comparison reads the same way on the chart: below 1, ours is faster or smaller.
     *
     * @return the ratio for a lower-is-better metric, its inverse otherwise
     */
    public Estimate costRatio() {
        return lowerIsBetter ? ratio() : ratio().inverse();
    }

    /** @return whether the target is met, missed or within the error bar ("—" without a target) */
    public String verdict() {
        return target == null ? "—" : target.verdict(ratio());
    }

    /**
     * A bound on the ratio ours / peer.
     *
     * @param atMost {@code true} for "ratio ≤ bound", {@code false} for "ratio ≥ bound"
     * @param bound  the bound
     */
    public record Target(boolean atMost, double bound) {
        /** @return "ratio ≤ bound" */
        public static Target atMost(double bound) {
            return new Target(true, bound);
        }

        /** @return "ratio ≥ bound" */
        public static Target atLeast(double bound) {
            return new Target(false, bound);
        }

        /**
         * @param ratio the measured ratio
         * @return {@code "met"} if the whole error bar is on the right side, {@code "MISSED"} if
         *     it is all on the wrong side, {@code "within error"} otherwise
         */
        public String verdict(Estimate ratio) {
            if (Double.isNaN(ratio.value())) {
                return "n/a";
            }
            double low = ratio.value() - ratio.error();
            double high = ratio.value() + ratio.error();
            boolean met = atMost ? high <= bound : low >= bound;
            boolean missed = atMost ? low > bound : high < bound;
            return met ? "met" : missed ? "MISSED" : "within error";
        }

        @Override
        public String toString() {
            return (atMost ? "≤ " : "≥ ") + String.format(Locale.ROOT, "%s", Estimate.format(bound));
        }
    }
}
