// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import org.jspecify.annotations.Nullable;

/**
 * The options every primitive's builder has: a name, a bound on how many may wait, and a listener.
 * {@link Semaphore.Builder}, {@link Mutex.Builder}, {@link RwLock.Builder} (through
 * {@link TrackedBuilder}) and {@link FairShareSemaphore.Builder} extend it, each returning its own
 * type from these methods and adding {@code leakDetection(mode)} ({@link LeakDetection}), so options
 * chain in any order:
 *
 * <pre>{@code
 * Semaphore uploads = Semaphore.builder(64 << 20)
 *         .name("uploads")
 *         .maxQueueLength(1_000)
 *         .leakDetection(LeakDetection.REPORT)
 *         .build();
 * }</pre>
 *
 * @param <B> the builder's own type
 * @param <L> the type of listener the primitive tells of its waits
 * @param <P> the type of primitive it builds
 */
public abstract class PrimitiveBuilder<B extends PrimitiveBuilder<B, L, P>, L, P extends PrimitiveView> {
    @Nullable
    String name;

    int maxQueueLength = Integer.MAX_VALUE;

    @Nullable
    L listener;

    /** Only the library's builders extend this class. */
    PrimitiveBuilder() {}

    /**
     * Names the primitive: its {@code name()} returns it, its {@code toString()} shows it, and the
     * metrics and JFR modules use it as their default tag. Unnamed by default.
     *
     * @param name a short name for logs and metrics, for example {@code "uploads"}
     * @return this builder
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is empty or blank
     */
    public B name(String name) {
        if (name == null) {
            throw new NullPointerException("name(null): the name is null");
        }
        if (name.isBlank()) {
            throw new IllegalArgumentException("name(\"" + name + "\"): the name must not be blank");
        }
        this.name = name;
        return self();
    }

    /**
     * Bounds how many acquisitions may wait: one that would have to queue while
     * {@code queueLength() + 1 > k} is rejected at once with {@link SemaphoreRejectedException}
     * (a failed future for the asynchronous faces), nothing queued, nothing held. One that can be
     * granted at once is never rejected. {@code 0} means "never queue". Unbounded by default.
     *
     * @param k the most waiting acquisitions, {@code >= 0}
     * @return this builder
     * @throws IllegalArgumentException if {@code k < 0}
     */
    public B maxQueueLength(int k) {
        if (k < 0) {
            throw new IllegalArgumentException("maxQueueLength(" + k + "): must not be negative");
        }
        this.maxQueueLength = k;
        return self();
    }

    /**
     * Sets the listener told of every wait: each acquisition that has to queue, how and when its
     * wait ends, and each one the queue bounds reject. Acquisitions granted at once are not
     * observed, so the fast path costs the same with or without a listener. Replaces a listener
     * set before. None by default.
     *
     * <pre>{@code
     * SemaphoreMetrics metrics = SemaphoreMetrics.builder().baseUnit("bytes").build();  // handoff-micrometer
     * Semaphore budget = Semaphore.builder(64 << 20)
     *         .name("uploads")
     *         .listener(metrics)
     *         .build();
     * metrics.monitor(budget).bindTo(registry);
     * }</pre>
     *
     * @param listener the listener, see its type for the threads it runs on
     * @return this builder
     * @throws NullPointerException if {@code listener} is null
     */
    public B listener(L listener) {
        if (listener == null) {
            throw new NullPointerException("listener(null): the listener is null");
        }
        this.listener = listener;
        return self();
    }

    /**
     * Builds the primitive with these options.
     *
     * @return a new primitive
     */
    public abstract P build();

    @SuppressWarnings("unchecked")
    final B self() {
        return (B) this;
    }
}
