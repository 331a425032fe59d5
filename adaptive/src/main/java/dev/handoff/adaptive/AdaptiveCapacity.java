// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import dev.handoff.Semaphore;
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
 * A capacity that sizes itself: resizes a {@link Semaphore} from the measured hold time and
 * {@link Outcome} of each use of its permits, so that as many calls run at once as the downstream
 * can serve without queueing — and fewer when it slows down or times out.
 *
 * <pre>{@code
 * Semaphore inFlight = Semaphore.builder(20).maxQueueLength(1_000).build();
 * AdaptiveCapacity adaptive = AdaptiveCapacity.builder(inFlight)
 *         .minCapacity(4)
 *         .maxCapacity(500)
 *         .build();
 *
 * Response r = adaptive.withPermitsBlocking(1, () -> client.send(request));   // timed and classified
 * }</pre>
 *
 * <p><b>How it samples.</b> Every use of permits taken through this object is one sample: the
 * time from the grant to the release (the <em>hold time</em>, the latency of the downstream
 * without the wait for permits) and an {@link Outcome}. The scoped calls
 * ({@link #withPermitsBlocking}, {@link #withPermitsAsync}, Kotlin's {@code withPermits}) classify
 * it: a body that completes is a success, a body that throws (or whose stage fails) is a failure,
 * unless it is a timeout ({@link TimeoutException}, {@code SocketTimeoutException} and the JDK's
 * other I/O timeouts), which is a drop, or a {@link Builder#classifier(Function) classifier} says
 * otherwise; a rejection by a full queue
 * ({@link SemaphoreRejectedException}) is recorded as {@link Outcome#REJECTED} and rethrown. A
 * {@link SampledPermits} handle ({@link #acquireBlocking}, {@link #acquireAsync},
 * {@link #tryAcquire}) is a success unless marked with {@link SampledPermits#markFailure()} or
 * {@link SampledPermits#markDropped()} before it is closed. Permits taken through the semaphore
 * itself are not sampled; wrap them with {@link #startSample(long)}, or report a rejection with
 * {@link #recordRejection(long)}. Sampling takes no lock and allocates nothing (the scoped
 * blocking call allocates nothing at all while nobody waits; the handle faces allocate the handle).
 *
 * <p><b>How it resizes.</b> Without {@link Builder#limit(com.netflix.concurrency.limits.Limit)},
 * by the built-in algorithm: per window of samples (100 ms by default), the mean hold time of the
 * successes is compared with a baseline, the lowest window mean of the last few seconds; while
 * latency is within {@link Builder#tolerance(double) tolerance} of the baseline and the capacity is
 * in use, it grows by about its square root per window; above, it shrinks toward the point where
 * latency is back within tolerance; on drops it shrinks by a fifth. It never grows when latency
 * does not allow it or when the permits are not in use, a dropped request never counts as a fast
 * one, and the baseline is refreshed by one short window at about half the use every few seconds
 * (never by pinning the capacity to its minimum), whether or not the capacity is in use: a
 * capacity built above what the downstream sustains comes down to it even while the callers are
 * fewer than the capacity. With a Netflix {@code Limit}, by that algorithm:
 * each sample goes to its {@code onSample} and each change of its limit becomes the capacity.
 * Either way the capacity stays within {@link Builder#minCapacity(long)} and
 * {@link Builder#maxCapacity(long)}, and changes through {@link Semaphore#setCapacity(long)}: it
 * never blocks, never revokes permits that are held (a shrink below what is held is paid back by
 * the next releases), and keeps the semaphore's FIFO order. The adaptive capacity owns the
 * semaphore's capacity: do not set it yourself.
 *
 * <p><b>Weights.</b> A call may take more than one permit, up to the present {@link #capacity()}.
 * A request above {@link #minCapacity()} may meet a capacity that shrank below it while it waited:
 * it then fails at once with the semaphore's {@link IllegalStateException} (nothing held, nothing
 * sampled), as {@link Semaphore#setCapacity(long)} fails a waiter that can no longer fit. Weights
 * up to {@code minCapacity} always fit.
 *
 * <p><b>Fair shares and Reactor.</b> {@link AdaptiveFairShare} sizes a
 * {@link dev.handoff.FairShareSemaphore} with the same algorithms and the same sampling, its calls
 * naming their key. In {@code handoff-reactor}, {@code ReactorAdaptive.withPermits(adaptive, n, body)}
 * is the scoped call for a {@code Mono}.
 *
 * <p>Thread-safe. Memory consistency effects: as the semaphore's acquire and release.
 */
public final class AdaptiveCapacity {

    private final Semaphore semaphore;
    /** Times, classifies and applies: shared with {@link AdaptiveFairShare}; keys are null here. */
    private final Sampler<@Nullable Void> sampler;

    private AdaptiveCapacity(Semaphore semaphore, Settings settings) {
        this.semaphore = semaphore;
        this.sampler = new Sampler<>(Gate.of(semaphore), settings);
    }

    /**
     * Starts a builder for an adaptive capacity that drives {@code semaphore}. Building it sets
     * the semaphore's capacity to the starting value: the semaphore's present capacity (or the
     * {@code Limit}'s initial limit), within the bounds.
     *
     * <pre>{@code
     * AdaptiveCapacity adaptive = AdaptiveCapacity.builder(new Semaphore(10)).maxCapacity(200).build();
     * }</pre>
     *
     * @param semaphore the semaphore whose capacity it will own
     * @return a new builder
     * @throws NullPointerException if {@code semaphore} is null
     */
    public static Builder builder(Semaphore semaphore) {
        if (semaphore == null) {
            throw new NullPointerException("builder(null): the semaphore is null");
        }
        return new Builder(semaphore);
    }

    /**
     * Configures an {@link AdaptiveCapacity}. Every setting is optional.
     */
    public static final class Builder {
        private final Semaphore semaphore;
        private final Settings settings = new Settings();

        private Builder(Semaphore semaphore) {
            this.semaphore = semaphore;
        }

        /**
         * The least capacity, default {@code 1}.
         *
         * @param min the least capacity, from {@code 1} to {@link Semaphore#MAX_PERMITS}
         * @return this builder
         * @throws IllegalArgumentException if {@code min < 1} or {@code min > Semaphore.MAX_PERMITS}
         */
        public Builder minCapacity(long min) {
            settings.minCapacity(min);
            return this;
        }

        /**
         * The greatest capacity, default {@code 1000} (or {@link #minCapacity(long)} if that is more).
         *
         * @param max the greatest capacity, from {@code 1} to {@link Semaphore#MAX_PERMITS}, and not
         *     below {@code minCapacity} (checked by {@link #build()})
         * @return this builder
         * @throws IllegalArgumentException if {@code max < 1} or {@code max > Semaphore.MAX_PERMITS}
         */
        public Builder maxCapacity(long max) {
            settings.maxCapacity(max);
            return this;
        }

        /**
         * Resizes by a Netflix concurrency-limits algorithm ({@code AIMDLimit}, {@code VegasLimit},
         * {@code Gradient2Limit}, {@code GradientLimit}, {@code WindowedLimit}, ...) instead of the
         * built-in one. Needs {@code com.netflix.concurrency-limits:concurrency-limits-core} on the
         * class path (an optional dependency of this module). Each success is sent as
         * {@code onSample(start, holdTime, inFlight, false)}, each drop with {@code didDrop = true};
         * failures and rejections are not sent, as Netflix's own limiters do. The starting capacity
         * is the limit's {@code getLimit()}. The limit must not be shared with another limiter.
         *
         * <pre>{@code
         * AdaptiveCapacity adaptive = AdaptiveCapacity.builder(semaphore)
         *         .limit(VegasLimit.newDefault())
         *         .build();
         * }</pre>
         *
         * @param limit the algorithm
         * @return this builder
         * @throws NullPointerException if {@code limit} is null
         */
        public Builder limit(com.netflix.concurrency.limits.Limit limit) {
            settings.limit(limit);
            return this;
        }

        /**
         * The built-in algorithm's tolerance, default {@code 1.5}: how far above the baseline (the
         * uncongested latency) the mean latency may rise before the capacity shrinks. The capacity
         * settles where the downstream queues about {@code tolerance - 1} of a call's time.
         *
         * @param tolerance from {@code 1.05} to {@code 10}
         * @return this builder
         * @throws IllegalArgumentException if {@code tolerance} is outside that range (or NaN)
         */
        public Builder tolerance(double tolerance) {
            settings.tolerance(tolerance);
            return this;
        }

        /**
         * The built-in algorithm's smoothing of decreases, default {@code 1}: the share of the way
         * to the computed capacity taken per window ({@code 1} = all of it at once; a decrease is
         * never more than half per window anyway). Lower it for a downstream whose latency is noisy
         * from one window to the next.
         *
         * @param smoothing above {@code 0}, at most {@code 1}
         * @return this builder
         * @throws IllegalArgumentException if {@code smoothing} is not in {@code (0, 1]} (or NaN)
         */
        public Builder smoothing(double smoothing) {
            settings.smoothing(smoothing);
            return this;
        }

        /**
         * The built-in algorithm's window, default 100 ms: the least time between two changes of
         * the capacity. A window also waits for 10 successes (or a drop), up to ten times as long.
         * Make it a few times the downstream's usual latency.
         *
         * @param window from 1 ms to 1 hour
         * @return this builder
         * @throws NullPointerException if {@code window} is null
         * @throws IllegalArgumentException if {@code window} is outside that range
         */
        public Builder window(Duration window) {
            settings.window(window);
            return this;
        }

        /**
         * The clock hold times are measured with, in nanoseconds, default {@link System#nanoTime()}.
         * For simulations and tests that run on virtual time (also passed to a Netflix
         * {@code Limit} as the samples' start times).
         *
         * <pre>{@code
         * AtomicLong now = new AtomicLong();
         * AdaptiveCapacity adaptive = AdaptiveCapacity.builder(semaphore).nanoClock(now::get).build();
         * }</pre>
         *
         * @param nanoClock returns the present time in nanoseconds
         * @return this builder
         * @throws NullPointerException if {@code nanoClock} is null
         */
        public Builder nanoClock(LongSupplier nanoClock) {
            settings.nanoClock(nanoClock);
            return this;
        }

        /**
         * How the scoped calls ({@code withPermitsBlocking}, {@code withPermitsAsync}, Kotlin's
         * {@code withPermits}, Reactor's) count a body that throws, default {@link Outcome#of}: a
         * {@link TimeoutException}, an {@link java.io.InterruptedIOException} (a
         * {@link java.net.SocketTimeoutException} among them) or a
         * {@code java.net.http.HttpTimeoutException} is a drop, anything else a failure. The
         * classifier gets the exception unwrapped from a {@code CompletionException} or an
         * {@code ExecutionException}, and returns {@link Outcome#DROPPED} (overload: the capacity
         * shrinks), {@link Outcome#FAILURE} (neither latency nor overload) or
         * {@link Outcome#SUCCESS} (an expected answer, such as "not found": its hold time is a
         * latency sample). {@code null} or {@link Outcome#REJECTED} count as a failure; a
         * classifier that throws counts as a failure and its exception is added to the body's as
         * suppressed. It runs on the thread that ends the call, outside every lock; keep it fast.
         *
         * <pre>{@code
         * AdaptiveCapacity adaptive = AdaptiveCapacity.builder(semaphore)
         *         .classifier(e -> e instanceof ServiceUnavailable ? Outcome.DROPPED : Outcome.of(e))
         *         .build();
         * }</pre>
         *
         * @param classifier maps what a body threw to its outcome
         * @return this builder
         * @throws NullPointerException if {@code classifier} is null
         */
        public Builder classifier(Function<? super Throwable, Outcome> classifier) {
            settings.classifier(classifier);
            return this;
        }

        /**
         * Adds a listener for the changes of the capacity: each is told the old value, the new one
         * and the {@link CapacityListener.Reason reason}, after the change, outside every lock, one
         * change at a time and in order (see {@link CapacityListener}). May be called more than
         * once; the listeners hear each change in the order they were added. A change made by
         * {@link #build()} (a starting capacity outside the bounds) is told during {@code build()}.
         *
         * <pre>{@code
         * AdaptiveCapacity adaptive = AdaptiveCapacity.builder(semaphore)
         *         .listener((from, to, reason) -> log.info("capacity {} -> {} ({})", from, to, reason))
         *         .build();
         * }</pre>
         *
         * @param listener the listener
         * @return this builder
         * @throws NullPointerException if {@code listener} is null
         */
        public Builder listener(CapacityListener listener) {
            settings.listener(listener);
            return this;
        }

        /**
         * Builds the adaptive capacity and sets the semaphore's capacity to the starting value.
         *
         * @return the adaptive capacity
         * @throws IllegalArgumentException if {@code maxCapacity < minCapacity}
         * @throws IllegalStateException if both {@link #limit} and a setting of the built-in
         *     algorithm ({@link #tolerance}, {@link #smoothing}, {@link #window}) were given
         */
        public AdaptiveCapacity build() {
            settings.checkBuild();
            return new AdaptiveCapacity(semaphore, settings);
        }
    }

    /**
     * Returns the semaphore whose capacity this object drives.
     *
     * @return the semaphore
     */
    public Semaphore semaphore() {
        return semaphore;
    }

    /**
     * Returns the present target capacity: the semaphore's capacity, within
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
     * Returns the built-in algorithm's baseline: the uncongested latency it compares each window
     * with, in nanoseconds (the lowest window mean of the last 64 windows). {@code NaN} before the
     * first window closes, and with a Netflix {@code Limit}. A snapshot, for metrics.
     *
     * @return the baseline in nanoseconds, or {@code NaN}
     */
    public double baselineNanos() {
        return sampler.controller().baselineNanos();
    }

    /**
     * Returns the mean hold time of the successes of the last window the built-in algorithm
     * closed, in nanoseconds. {@code NaN} before the first window closes, and with a Netflix
     * {@code Limit}. A snapshot, for metrics.
     *
     * @return the last window's mean latency in nanoseconds, or {@code NaN}
     */
    public double windowLatencyNanos() {
        return sampler.controller().windowLatencyNanos();
    }

    /**
     * Returns how many sampled uses ended as {@link Outcome#DROPPED} since this object was built
     * (all of them, also those the algorithm does not act on because they started before its last
     * cut). A snapshot, for metrics.
     *
     * @return the drops counted so far
     */
    public long drops() {
        return sampler.drops();
    }

    /**
     * Returns how many permits are held through this object now (a snapshot).
     *
     * @return the permits held by sampled uses
     */
    public long inFlight() {
        return sampler.inFlight();
    }

    /**
     * Returns how the scoped calls count work that threw {@code thrown}: the
     * {@link Builder#classifier(Function) classifier}'s answer, else {@link Outcome#of(Throwable)}.
     * For code that samples with {@link #startSample(long)} or a handle and marks it as the scoped
     * calls would.
     *
     * <pre>{@code
     * if (adaptive.classify(e) == Outcome.DROPPED) p.markDropped(); else p.markFailure();
     * }</pre>
     *
     * @param thrown what the work threw
     * @return {@link Outcome#DROPPED}, {@link Outcome#FAILURE} or {@link Outcome#SUCCESS}
     * @throws NullPointerException if {@code thrown} is null
     */
    public Outcome classify(Throwable thrown) {
        return sampler.classify(thrown);
    }

    /**
     * Runs {@code body} holding {@code n} permits, waiting for them as
     * {@link Semaphore#acquireBlocking(long)} does, releases them, and samples the hold time and
     * the outcome: success if {@code body} returns; if it throws, as {@link #classify(Throwable)}
     * says (by default a drop for a {@link TimeoutException} or an I/O timeout, a failure for
     * anything else). A rejection by a full queue is recorded as
     * {@link Outcome#REJECTED} and thrown. Allocates nothing of its own while nobody waits.
     *
     * <pre>{@code
     * String page = adaptive.withPermitsBlocking(1, () -> http.get(url));
     * }</pre>
     *
     * @param n the number of permits, from {@code 0} to the present {@link #capacity()}
     * @param body the work to run holding them
     * @param <T> the result type
     * @return what {@code body} returned
     * @throws Exception what {@code body} threw (after the permits are released)
     * @throws InterruptedException if interrupted while waiting for the permits (nothing held)
     * @throws dev.handoff.SemaphoreClosedException if the semaphore is or gets closed before the grant
     * @throws SemaphoreRejectedException if the semaphore's queue bound rejects the wait
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     * @throws NullPointerException if {@code body} is null
     */
    public <T extends @Nullable Object> T withPermitsBlocking(long n, Callable<T> body) throws Exception {
        return sampler.withPermitsBlocking(null, n, body);
    }

    /**
     * Runs {@code body} holding {@code n} permits and releases them when the stage it returns
     * completes, as {@link Semaphore#withPermitsAsync} does, sampling the time from the grant to
     * that completion and the outcome: success if the stage completes normally; if it fails (or
     * {@code body} throws), as {@link #classify(Throwable)} says (by default a drop for a
     * {@link TimeoutException}, as {@code orTimeout} fails it, or an I/O timeout, a failure
     * otherwise); a failure if {@code body} returns {@code null}. A rejection by a full queue fails the result
     * with the {@link SemaphoreRejectedException} and is recorded as {@link Outcome#REJECTED}.
     * Cancelling the result before the grant withdraws the wait; a grant that wins that race is
     * released without running {@code body} and without a sample.
     *
     * <pre>{@code
     * CompletableFuture<HttpResponse<String>> r = adaptive.withPermitsAsync(1,
     *         () -> client.sendAsync(request, ofString()).orTimeout(2, TimeUnit.SECONDS));
     * }</pre>
     *
     * @param n the number of permits, from {@code 0} to the present {@link #capacity()}
     * @param body the work to run holding them; returns the stage whose completion releases them
     * @param <T> the result type
     * @return a future completed with the stage's result, or failed with its, {@code body}'s or the
     *     acquisition's exception
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     * @throws NullPointerException if {@code body} is null
     */
    public <T extends @Nullable Object> CompletableFuture<T> withPermitsAsync(
            long n, Supplier<? extends CompletionStage<T>> body) {
        return sampler.withPermitsAsync(null, n, body);
    }

    /**
     * Takes {@code n} permits, waiting as {@link Semaphore#acquireBlocking(long)} does, and returns
     * a handle that samples their use when it is closed. A rejection by a full queue is recorded as
     * {@link Outcome#REJECTED} and thrown.
     *
     * <pre>{@code
     * try (SampledPermits p = adaptive.acquireBlocking(1)) {
     *     Result r = call();
     *     if (r.isOverloaded()) p.markDropped();
     *     return r;
     * }
     * }</pre>
     *
     * @param n the number of permits, from {@code 0} to the present {@link #capacity()}
     * @return the handle; close it to release and sample
     * @throws InterruptedException if interrupted while waiting (nothing held)
     * @throws dev.handoff.SemaphoreClosedException if the semaphore is or gets closed before the grant
     * @throws SemaphoreRejectedException if the semaphore's queue bound rejects the wait
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     */
    public SampledPermits acquireBlocking(long n) throws InterruptedException {
        return sampler.acquireBlocking(null, n);
    }

    /**
     * Takes {@code n} permits as {@link Semaphore#acquireAsync(long)} does; the future completes
     * with a handle that samples their use when it is closed. A rejection by a full queue fails the
     * future with the {@link SemaphoreRejectedException} and is recorded as {@link Outcome#REJECTED}.
     * If the future is cancelled before the grant, the wait is withdrawn and nothing is sampled.
     *
     * <pre>{@code
     * adaptive.acquireAsync(1).thenCompose(p -> call().whenComplete((r, e) -> {
     *     if (e instanceof TimeoutException) p.markDropped();
     *     p.close();
     * }));
     * }</pre>
     *
     * @param n the number of permits, from {@code 0} to the present {@link #capacity()}
     * @return a future completed with the handle when the permits are granted
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     */
    public CompletableFuture<SampledPermits> acquireAsync(long n) {
        return sampler.acquireAsync(null, n);
    }

    /**
     * Takes {@code n} permits if they are free now (and nobody waits), as
     * {@link Semaphore#tryAcquire(long)} does, and returns a handle that samples their use;
     * otherwise records a {@link Outcome#REJECTED} and returns {@code null}: for load shedding.
     *
     * <pre>{@code
     * SampledPermits p = adaptive.tryAcquire(1);
     * if (p == null) return Response.status(503).build();
     * try (p) { return handle(request); }
     * }</pre>
     *
     * @param n the number of permits, from {@code 0} to the present {@link #capacity()}
     * @return the handle, or {@code null} if the permits were not free
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     */
    public @Nullable SampledPermits tryAcquire(long n) {
        return sampler.tryAcquire(null, n);
    }

    /**
     * Starts sampling {@code n} permits that the caller already holds, taken from the semaphore by
     * another face (the callback face {@code acquireThen}, Kotlin's {@code acquire}, a Reactor
     * operator...): the hold time runs from now; closing the handle releases them to the semaphore
     * by count and records the sample.
     *
     * <pre>{@code
     * semaphore.acquireThen(1, () -> {
     *     SampledPermits p = adaptive.startSample(1);
     *     callDownstream().whenComplete((r, e) -> p.close());
     * });
     * }</pre>
     *
     * @param n the number of permits held, from {@code 0} to the present {@link #capacity()}
     * @return the handle; close it to release and sample
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     */
    public SampledPermits startSample(long n) {
        return sampler.startSample(null, n);
    }

    /**
     * Records that a use of {@code n} permits was refused before it got them (a full queue, a wait
     * that timed out, a request shed by the caller): an {@link Outcome#REJECTED} sample. The faces of
     * this class record their own rejections.
     *
     * <pre>{@code
     * if (!semaphore.tryAcquireBlocking(1, Duration.ofMillis(50))) {
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
     * @return for example {@code AdaptiveCapacity[capacity=42, min=1, max=1000, inFlight=40, BaselineGradient[...]]}
     */
    @Override
    public String toString() {
        return "AdaptiveCapacity[" + sampler.describe() + "]";
    }

    /** The controller, for tests in this package. */
    Controller controller() {
        return sampler.controller();
    }

    /** The checks of the faces, for the Kotlin face (which checks before it suspends). */
    void checkPermits(String call, long n) {
        sampler.check(call, null, n);
    }
}
