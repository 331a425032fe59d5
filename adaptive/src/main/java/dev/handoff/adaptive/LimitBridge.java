// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import com.netflix.concurrency.limits.Limit;

/**
 * Drives the capacity from a Netflix concurrency-limits {@link Limit}: every sample goes to
 * {@link Limit#onSample(long, long, int, boolean)} as Netflix's own limiters send it, and every
 * change of the limit ({@link Limit#notifyOnChange}) becomes a {@code setCapacity}, within the
 * bounds. This class is the only one that names concurrency-limits, and it is loaded only when
 * {@code AdaptiveCapacity.Builder.limit(..)} was called: users of the built-in algorithm need not
 * have the library.
 *
 * <p>Mapping, as in Netflix's {@code AbstractLimiter} listener: {@link Outcome#SUCCESS} is
 * {@code onSample(start, rtt, inFlight, false)} ({@code onSuccess}); {@link Outcome#DROPPED} is
 * {@code onSample(start, rtt, inFlight, true)} ({@code onDropped}); {@link Outcome#FAILURE} is not
 * sampled ({@code onIgnore}); {@link Outcome#REJECTED} is not sampled (Netflix's limiters never
 * sample a request they did not admit). Netflix's {@code AbstractLimit.onSample} is
 * {@code synchronized}: through this bridge each sample takes that lock. The built-in algorithm
 * takes none.
 */
final class LimitBridge implements Controller {
    private final Limit limit;

    LimitBridge(Object limit, Sampler<?> capacity) {
        this.limit = (Limit) limit;
        Limit own = this.limit;
        own.notifyOnChange(next -> {
            capacity.apply(next, CapacityListener.Reason.LIMIT);
            if (!Thread.holdsLock(own)) {
                capacity.deliver(); // else the sampling thread delivers once onSample has left the limit's lock
            }
        });
    }

    /** The limit's present value, the capacity to start with. */
    static long initial(Object limit) {
        return ((Limit) limit).getLimit();
    }

    @Override
    public void acquired(long inFlight) {}

    @Override
    public void sample(long startNanos, long endNanos, long permits, long inFlight, Outcome outcome) {
        if (outcome == Outcome.SUCCESS || outcome == Outcome.DROPPED) {
            limit.onSample(
                    startNanos,
                    endNanos - startNanos,
                    (int) Math.min(Integer.MAX_VALUE, inFlight),
                    outcome == Outcome.DROPPED);
        }
    }

    @Override
    public String toString() {
        return limit.toString();
    }
}
