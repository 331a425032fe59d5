// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import dev.handoff.FairShareSemaphore;
import dev.handoff.SemaphoreRejectedException;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A fair share that sizes itself: resizes the total capacity of a {@link FairShareSemaphore} from
 * the measured hold time and {@link Outcome} of each use of its permits, by the algorithm and with
 * the sampling of {@link AdaptiveCapacity}, while the fair share keeps dividing whatever the
 * capacity is among the keys by their shares.
 *
 * <pre>{@code
 * FairShareSemaphore<String> database = FairShareSemaphore.<String>builder(20)
 *         .share(tenant -> tenant.startsWith("premium-") ? 4 : 1)
 *         .build();
 * AdaptiveFairShare<String> adaptive = AdaptiveFairShare.builder(database)
 *         .minCapacity(4)
 *         .maxCapacity(200)
 *         .build();
 *
 * Rows rows = adaptive.withPermitsBlocking(request.tenant(), 1, () -> runQuery(request));
 * }</pre>
 *
 * <p><b>One capacity, every key's samples.</b> The capacity is the one the keys share, so every
 * use of permits taken through this object is a sample of the same downstream, whichever key it
 * was for: the hold time from the grant to the release, and its outcome, classified as by
 * {@link AdaptiveCapacity} (a body that returns is a success, a timeout a drop and another
 * exception a failure, as the classifier says; a rejection by a queue bound {@link Outcome#REJECTED}). How the
 * capacity moves is the same too, see {@link AdaptiveCapacity}: within {@link #minCapacity()} and
 * {@link #maxCapacity()}, through {@link FairShareSemaphore#setCapacity(long)}, which never
 * blocks, never revokes held permits and keeps the fair order. The calls name their key, and the
 * permits are given back to that key: {@link #withPermitsBlocking(Object, long, Callable)},
 * {@link #withPermitsAsync(Object, long, Supplier)}, the {@link SampledPermits} handles of
 * {@link #acquireBlocking(Object, long)}, {@link #acquireAsync(Object, long)} and
 * {@link #tryAcquire(Object, long)}, Kotlin's {@code withPermits(key, n)} and
 * {@code acquire(key, n)}.
 *
 * <p><b>Per-key limits.</b> A request held back only by its key's cap
 * ({@link FairShareSemaphore.Builder#maxPermitsPerKey(long)}) says nothing about the shared
 * capacity: it does not count as demand for it (it waits while permits are free), and a
 * {@link #tryAcquire(Object, long)} refused by the cap is not recorded as a rejection. A request
 * heavier than the cap is refused at once with {@link IllegalArgumentException}, as one heavier
 * than the present {@link #capacity()}.
 *
 * <p>The adaptive fair share owns the fair share's capacity: do not set it yourself. Permits taken
 * through the fair share itself are not sampled; wrap them with {@link #startSample(Object, long)}.
 *
 * <p>Thread-safe. Memory consistency effects: as the fair share's acquire and release.
 *
 * @param <K> the key type of the fair share
 */
public final class AdaptiveFairShare<K> {

    private final FairShareSemaphore<K> fairShare;
    /** Times, classifies and applies: the engine of {@link AdaptiveCapacity}, over the fair share. */
    private final Sampler<K> sampler;

    private AdaptiveFairShare(FairShareSemaphore<K> fairShare, Settings settings) {
        this.fairShare = fairShare;
        this.sampler = new Sampler<>(Gate.of(fairShare), settings);
    }

    /**
     * Starts a builder for an adaptive fair share that drives {@code fairShare}'s total capacity.
     * Building it sets that capacity to the starting value: the fair share's present capacity (or
     * the {@code Limit}'s initial limit), within the bounds.
     *
     * <pre>{@code
     * AdaptiveFairShare<String> adaptive = AdaptiveFairShare.builder(database).maxCapacity(200).build();
     * }</pre>
     *
     * @param fairShare the fair share whose capacity it will own
     * @param <K> the key type
     * @return a new builder
     * @throws NullPointerException if {@code fairShare} is null
     */
    public static <K> Builder<K> builder(FairShareSemaphore<K> fairShare) {
        if (fairShare == null) {
            throw new NullPointerException("builder(null): the fair share is null");
        }
        return new Builder<>(fairShare);
    }

    /**
     * Configures an {@link AdaptiveFairShare}: the settings of {@link AdaptiveCapacity.Builder},
     * with the same defaults and checks. Every setting is optional.
     *
     * @param <K> the key type
     */
    public static final class Builder<K> {
        private final FairShareSemaphore<K> fairShare;
        private final Settings settings = new Settings();

        private Builder(FairShareSemaphore<K> fairShare) {
            this.fairShare = fairShare;
        }

        /**
         * The least total capacity, default {@code 1}. Also the most permits one call may take.
         *
         * @param min the least capacity, from {@code 1} to {@link dev.handoff.Semaphore#MAX_PERMITS}
         * @return this builder
         * @throws IllegalArgumentException if {@code min < 1} or {@code min > Semaphore.MAX_PERMITS}
         */
        public Builder<K> minCapacity(long min) {
            settings.minCapacity(min);
            return this;
        }

        /**
         * The greatest total capacity, default {@code 1000} (or {@link #minCapacity(long)} if that
         * is more).
         *
         * @param max the greatest capacity, from {@code 1} to {@link dev.handoff.Semaphore#MAX_PERMITS},
         *     and not below {@code minCapacity} (checked by {@link #build()})
         * @return this builder
         * @throws IllegalArgumentException if {@code max < 1} or {@code max > Semaphore.MAX_PERMITS}
         */
        public Builder<K> maxCapacity(long max) {
            settings.maxCapacity(max);
            return this;
        }

        /**
         * Resizes by a Netflix concurrency-limits algorithm instead of the built-in one, as
         * {@link AdaptiveCapacity.Builder#limit(com.netflix.concurrency.limits.Limit)}: needs
         * {@code concurrency-limits-core} on the class path; successes and drops of every key are
         * sent to its {@code onSample}.
         *
         * <pre>{@code
         * AdaptiveFairShare<String> adaptive = AdaptiveFairShare.builder(database)
         *         .limit(Gradient2Limit.newDefault())
         *         .build();
         * }</pre>
         *
         * @param limit the algorithm; must not be shared with another limiter
         * @return this builder
         * @throws NullPointerException if {@code limit} is null
         */
        public Builder<K> limit(com.netflix.concurrency.limits.Limit limit) {
            settings.limit(limit);
            return this;
        }

        /**
         * The built-in algorithm's tolerance, default {@code 1.5}, as
         * {@link AdaptiveCapacity.Builder#tolerance(double)}.
         *
         * @param tolerance from {@code 1.05} to {@code 10}
         * @return this builder
         * @throws IllegalArgumentException if {@code tolerance} is outside that range (or NaN)
         */
        public Builder<K> tolerance(double tolerance) {
            settings.tolerance(tolerance);
            return this;
        }

        /**
         * The built-in algorithm's smoothing of decreases, default {@code 1}, as
         * {@link AdaptiveCapacity.Builder#smoothing(double)}.
         *
         * @param smoothing above {@code 0}, at most {@code 1}
         * @return this builder
         * @throws IllegalArgumentException if {@code smoothing} is not in {@code (0, 1]} (or NaN)
         */
        public Builder<K> smoothing(double smoothing) {
            settings.smoothing(smoothing);
            return this;
        }

        /**
         * The built-in algorithm's window, default 100 ms, as
         * {@link AdaptiveCapacity.Builder#window(Duration)}.
         *
         * @param window from 1 ms to 1 hour
         * @return this builder
         * @throws NullPointerException if {@code window} is null
         * @throws IllegalArgumentException if {@code window} is outside that range
         */
        public Builder<K> window(Duration window) {
            settings.window(window);
            return this;
        }

        /**
         * The clock hold times are measured with, in nanoseconds, default {@link System#nanoTime()},
         * as {@link AdaptiveCapacity.Builder#nanoClock(LongSupplier)}: for simulations and tests on
         * virtual time.
         *
         * @param nanoClock returns the present time in nanoseconds
         * @return this builder
         * @throws NullPointerException if {@code nanoClock} is null
         */
        public Builder<K> nanoClock(LongSupplier nanoClock) {
            settings.nanoClock(nanoClock);
            return this;
        }

        /**
         * How the scoped calls count a body that throws, as
         * {@link AdaptiveCapacity.Builder#classifier(Function)}; default {@link Outcome#of}.
         *
         * @param classifier maps what a body threw to its outcome
         * @return this builder
         * @throws NullPointerException if {@code classifier} is null
         */
        public Builder<K> classifier(Function<? super Throwable, Outcome> classifier) {
            settings.classifier(classifier);
            return this;
        }

        /**
         * Adds a listener for the changes of the capacity, as
         * {@link AdaptiveCapacity.Builder#listener(CapacityListener)}.
         *
         * @param listener the listener
         * @return this builder
         * @throws NullPointerException if {@code listener} is null
         */
        public Builder<K> listener(CapacityListener listener) {
            settings.listener(listener);
            return this;
        }

        /**
         * Builds the adaptive fair share and sets the fair share's capacity to the starting value.
         *
         * @return the adaptive fair share
         * @throws IllegalArgumentException if {@code maxCapacity < minCapacity}
         * @throws IllegalStateException if both {@link #limit} and a setting of the built-in
         *     algorithm ({@link #tolerance}, {@link #smoothing}, {@link #window}) were given
         */
        public AdaptiveFairShare<K> build() {
            settings.checkBuild();
            return new AdaptiveFairShare<>(fairShare, settings);
        }
    }

    /**
     * Returns the fair share whose capacity this object drives.
     *
     * @return the fair share
     */
    public FairShareSemaphore<K> fairShare() {
        return fairShare;
    }

    /**
     * Returns the present target capacity: the fair share's total capacity, within
     * {@link #minCapacity()} and {@link #maxCapacity()}.
     *
     * @return the capacity
     */
    public long capacity() {
        return sampler.capacity();
    }

    /**
     * Returns the least capacity.
     *
     * @return the bound set by {@link Builder#minCapacity(long)}
     */
    public long minCapacity() {
        return sampler.minCapacity();
    }

    /**
     * Returns the greatest capacity.
     *
     * @return the bound set by {@link Builder#maxCapacity(long)}, or its default
     */
    public long maxCapacity() {
        return sampler.maxCapacity();
    }

    /**
     * Returns how the scoped calls count work that threw {@code thrown}, as
     * {@link AdaptiveCapacity#classify(Throwable)}: the builder's classifier, else
     * {@link Outcome#of(Throwable)}.
     *
     * @param thrown what the work threw
     * @return {@link Outcome#DROPPED}, {@link Outcome#FAILURE} or {@link Outcome#SUCCESS}
     * @throws NullPointerException if {@code thrown} is null
     */
    public Outcome classify(Throwable thrown) {
        return sampler.classify(thrown);
    }

    /**
     * Returns how many permits are held through this object now, over every key (a snapshot).
     *
     * @return the permits held by sampled uses
     */
    public long inFlight() {
        return sampler.inFlight();
    }

    /**
     * Returns the built-in algorithm's baseline, as {@link AdaptiveCapacity#baselineNanos()}: the
     * uncongested latency in nanoseconds (the lowest window mean of the last 64 windows).
     * {@code NaN} before the first window closes, and with a Netflix {@code Limit}. A snapshot, for
     * metrics.
     *
     * @return the baseline in nanoseconds, or {@code NaN}
     */
    public double baselineNanos() {
        return sampler.controller().baselineNanos();
    }

    /**
     * Returns the mean hold time of the successes of the last window the built-in algorithm
     * closed, over every key, in nanoseconds, as {@link AdaptiveCapacity#windowLatencyNanos()}.
     * {@code NaN} before the first window closes, and with a Netflix {@code Limit}. A snapshot, for
     * metrics.
     *
     * @return the last window's mean latency in nanoseconds, or {@code NaN}
     */
    public double windowLatencyNanos() {
        return sampler.controller().windowLatencyNanos();
    }

    /**
     * Returns how many sampled uses, of every key, ended as {@link Outcome#DROPPED} since this
     * object was built, as {@link AdaptiveCapacity#drops()}. A snapshot, for metrics.
     *
     * @return the drops counted so far
     */
    public long drops() {
        return sampler.drops();
    }

    /**
     * Runs {@code body} holding {@code n} permits for {@code key}, waiting for them as
     * {@link FairShareSemaphore#acquireBlocking(Object, long)} does (in fair order across keys),
     * releases them to {@code key}, and samples the hold time and the outcome: success if
     * {@code body} returns, and as the builder's classifier says if it throws (by default a
     * {@link TimeoutException} or one of the JDK's I/O timeouts is a drop, anything else a
     * failure). A rejection by a queue bound is recorded as {@link Outcome#REJECTED} and
     * thrown. Allocates nothing of its own while nobody waits.
     *
     * <pre>{@code
     * Rows rows = adaptive.withPermitsBlocking(tenant, 1, () -> runQuery(sql));
     * }</pre>
     *
     * @param key the key the permits are for
     * @param n the number of permits, from {@code 0} to the present {@link #capacity()} and the fair share's
     *     per-key cap
     * @param body the work to run holding them
     * @param <T> the result type
     * @return what {@code body} returned
     * @throws Exception what {@code body} threw (after the permits are released)
     * @throws InterruptedException if interrupted while waiting for the permits (nothing held)
     * @throws dev.handoff.SemaphoreClosedException if the fair share is or gets closed before the grant
     * @throws SemaphoreRejectedException if a queue bound of the fair share rejects the wait
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} or {@code body} is null
     */
    public <T extends @Nullable Object> T withPermitsBlocking(K key, long n, Callable<T> body) throws Exception {
        return sampler.withPermitsBlocking(key, n, body);
    }

    /**
     * Runs {@code body} holding {@code n} permits for {@code key} and releases them to {@code key}
     * when the stage it returns completes, sampling the time from the grant to that completion and
     * the outcome: success if the stage completes normally, and as the builder's classifier says
     * if it fails (by default a {@link TimeoutException} or one of the JDK's I/O timeouts is a
     * drop, anything else a failure; also when {@code body} throws or returns {@code null}, a
     * failure). A rejection by a queue bound fails the result with the
     * {@link SemaphoreRejectedException} and is recorded as {@link Outcome#REJECTED}. Cancelling
     * the result before the grant withdraws the wait; a grant that wins that race is released
     * without running {@code body} and without a sample.
     *
     * <pre>{@code
     * CompletableFuture<Rows> rows = adaptive.withPermitsAsync(tenant, 1,
     *         () -> database.queryAsync(sql).orTimeout(2, TimeUnit.SECONDS));
     * }</pre>
     *
     * @param key the key the permits are for
     * @param n the number of permits, from {@code 0} to the present {@link #capacity()} and the fair share's
     *     per-key cap
     * @param body the work to run holding them; returns the stage whose completion releases them
     * @param <T> the result type
     * @return a future completed with the stage's result, or failed with its, {@code body}'s or the
     *     acquisition's exception
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} or {@code body} is null
     */
    public <T extends @Nullable Object> CompletableFuture<T> withPermitsAsync(
            K key, long n, Supplier<? extends CompletionStage<T>> body) {
        return sampler.withPermitsAsync(key, n, body);
    }

    /**
     * Takes {@code n} permits for {@code key}, waiting as
     * {@link FairShareSemaphore#acquireBlocking(Object, long)} does, and returns a handle that
     * releases them to {@code key} and samples their use when it is closed (a success unless
     * marked). A rejection by a queue bound is recorded as {@link Outcome#REJECTED} and thrown.
     *
     * <pre>{@code
     * try (SampledPermits p = adaptive.acquireBlocking(tenant, 1)) {
     *     Result r = call();
     *     if (r.isOverloaded()) p.markDropped();
     *     return r;
     * }
     * }</pre>
     *
     * @param key the key the permits are for
     * @param n the number of permits, from {@code 0} to the present {@link #capacity()} and the per-key cap
     * @return the handle; close it to release and sample
     * @throws InterruptedException if interrupted while waiting (nothing held)
     * @throws dev.handoff.SemaphoreClosedException if the fair share is or gets closed before the grant
     * @throws SemaphoreRejectedException if a queue bound of the fair share rejects the wait
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} is null
     */
    public SampledPermits acquireBlocking(K key, long n) throws InterruptedException {
        return sampler.acquireBlocking(key, n);
    }

    /**
     * Takes {@code n} permits for {@code key} as {@link FairShareSemaphore#acquireAsync(Object, long)}
     * does; the future completes with a handle that releases them to {@code key} and samples their
     * use when it is closed. A rejection by a queue bound fails the future with the
     * {@link SemaphoreRejectedException} and is recorded as {@link Outcome#REJECTED}. If the future
     * is cancelled before the grant, the wait is withdrawn and nothing is sampled.
     *
     * <pre>{@code
     * adaptive.acquireAsync(tenant, 1).thenCompose(p -> call().whenComplete((r, e) -> {
     *     if (e instanceof TimeoutException) p.markDropped();
     *     p.close();
     * }));
     * }</pre>
     *
     * @param key the key the permits are for
     * @param n the number of permits, from {@code 0} to the present {@link #capacity()} and the per-key cap
     * @return a future completed with the handle when the permits are granted
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} is null
     */
    public CompletableFuture<SampledPermits> acquireAsync(K key, long n) {
        return sampler.acquireAsync(key, n);
    }

    /**
     * Takes {@code n} permits for {@code key} if that can be done at once, as
     * {@link FairShareSemaphore#tryAcquire(Object, long)} does, and returns a handle that releases
     * them to {@code key} and samples their use; otherwise returns {@code null}, recorded as an
     * {@link Outcome#REJECTED} unless the key's cap was what refused it: for load shedding.
     *
     * <pre>{@code
     * SampledPermits p = adaptive.tryAcquire(tenant, 1);
     * if (p == null) return Response.status(503).build();
     * try (p) { return handle(request); }
     * }</pre>
     *
     * @param key the key the permits are for
     * @param n the number of permits, from {@code 0} to the present {@link #capacity()} and the per-key cap
     * @return the handle, or {@code null} if the permits could not be taken at once
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} is null
     */
    public @Nullable SampledPermits tryAcquire(K key, long n) {
        return sampler.tryAcquire(key, n);
    }

    /**
     * Starts sampling {@code n} permits that {@code key} already holds, taken from the fair share by
     * another face (its callback face {@code acquireThen}, Kotlin's {@code acquire(key, n)}, a
     * Reactor operator...): the hold time runs from now; closing the handle releases them to
     * {@code key} by count and records the sample.
     *
     * <pre>{@code
     * database.acquireThen(tenant, 1, () -> {
     *     SampledPermits p = adaptive.startSample(tenant, 1);
     *     queryAsync(sql).whenComplete((r, e) -> p.close());
     * });
     * }</pre>
     *
     * @param key the key that holds them
     * @param n the number of permits held, from {@code 0} to the present {@link #capacity()} and the per-key cap
     * @return the handle; close it to release and sample
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()} or {@code n}
     *     exceeds the per-key cap
     * @throws NullPointerException if {@code key} is null
     */
    public SampledPermits startSample(K key, long n) {
        return sampler.startSample(key, n);
    }

    /**
     * Records that a use of {@code n} permits was refused before it got them (a queue bound, a
     * wait that timed out, a request shed by the caller): an {@link Outcome#REJECTED} sample of
     * the shared capacity, whichever key it was for. The faces of this class record their own
     * rejections.
     *
     * <pre>{@code
     * if (!database.tryAcquireBlocking(tenant, 1, Duration.ofMillis(50))) {
     *     adaptive.recordRejection(1);
     *     throw new Overloaded();
     * }
     * }</pre>
     *
     * @param n the number of permits asked for, {@code >= 0}
     * @throws IllegalArgumentException if {@code n < 0}
     */
    public void recordRejection(long n) {
        sampler.recordRejection(n);
    }

    /**
     * Describes the capacity, the bounds, what is in flight and the algorithm.
     *
     * @return for example {@code AdaptiveFairShare[capacity=42, min=1, max=1000, inFlight=40, BaselineGradient[...]]}
     */
    @Override
    public String toString() {
        return "AdaptiveFairShare[" + sampler.describe() + "]";
    }

    /** The controller, for tests in this package. */
    Controller controller() {
        return sampler.controller();
    }

    /** The checks of the faces, for the Kotlin face (which checks before it suspends). */
    void checkPermits(String call, K key, long n) {
        sampler.check(call, key, n);
    }
}
