// SPDX-License-Identifier: Apache-2.0
package dev.handoff.edge;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Permits;
import dev.handoff.PrimitiveView;
import dev.handoff.Semaphore;
import dev.handoff.SemaphoreClosedException;
import dev.handoff.SemaphoreRejectedException;
import dev.handoff.adaptive.AdaptiveCapacity;
import dev.handoff.adaptive.AdaptiveFairShare;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/**
 * Admission control at a service's edge: every request takes its permits before its handler runs
 * and gives them back exactly once when its response ends; a request that cannot be admitted in
 * time is shed, its handler not run, with a {@link ShedReason} and a {@code Retry-After} hint. One
 * configuration for every framework (a Ktor plugin, a gRPC interceptor, a servlet filter each wrap
 * it):
 *
 * <ul>
 *   <li>the cost of a request ({@link Builder#cost}, 1 by default): its weight in permits;</li>
 *   <li>whose it is ({@link Builder#key}): with a key, the limit is a {@link FairShareSemaphore}
 *       that shares the capacity fairly across keys, each with its share;</li>
 *   <li>how big: a fixed {@link Builder#capacity}, or a limit built by the caller
 *       ({@link Builder#limiter(Semaphore)} and its overloads), among them an
 *       {@link AdaptiveCapacity} or {@link AdaptiveFairShare} that sizes itself from the measured
 *       latency;</li>
 *   <li>how long a request may wait ({@link Builder#maxWait}) and how much may wait (the queue
 *       bounds of the limit: {@link Builder#maxQueueLength}, {@link Builder#maxQueuedPermits},
 *       {@link Builder#maxQueuedPermitsPerKey});</li>
 *   <li>the hint a shed request's client gets ({@link Builder#retryAfter}).</li>
 * </ul>
 *
 * <p>The waiting is the limit's own: strictly FIFO (fair across keys with a key), and a request
 * that stops waiting (its wait timed out, its future was cancelled) withdraws without taking or
 * losing a permit. Immutable and thread-safe once built.
 *
 * <pre>{@code
 * AdmissionControl<HttpServletRequest> gate = AdmissionControl.<HttpServletRequest>builder()
 *         .capacity(64)
 *         .key(req -> req.getHeader("X-Tenant"), tenant -> 1)
 *         .cost(req -> req.getContentLengthLong() > 1_000_000 ? 4 : 1)
 *         .maxWait(Duration.ofMillis(200))
 *         .maxQueueLength(256)
 *         .name("api")
 *         .build();
 *
 * gate.admitAsync(request).thenAccept(decision -> {
 *     Admission admission = decision.admission();
 *     if (admission == null) {              // shed: the handler does not run
 *         reply503(decision.retryAfterSeconds());
 *         return;
 *     }
 *     handle(request).whenComplete((r, e) -> {
 *         if (e == null) admission.release(); else admission.release(e);
 *     });
 * });
 * }</pre>
 *
 * @param <R> the framework's request type, which the cost and key functions read
 */
public final class AdmissionControl<R> {

    /** The timer of every gate's waits: one daemon thread, cancelled timers removed at once. */
    private static final class Timer {
        static final ScheduledThreadPoolExecutor EXECUTOR = create();

        private static ScheduledThreadPoolExecutor create() {
            ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, task -> {
                Thread thread = new Thread(task, "handoff-edge-timer");
                thread.setDaemon(true);
                return thread;
            });
            executor.setRemoveOnCancelPolicy(true);
            return executor;
        }
    }

    private final Limiter<R> limiter;
    private final ToLongFunction<? super R> cost;
    private final Duration maxWait;
    private final long maxWaitNanos;
    private final Duration retryAfter;
    private final Decision[] shedDecisions;
    private final LongAdder[] shedCounts;

    private AdmissionControl(Limiter<R> limiter, Builder<R> builder) {
        this.limiter = limiter;
        this.cost = builder.cost;
        this.maxWait = builder.maxWait;
        this.maxWaitNanos = saturatedNanos(builder.maxWait);
        this.retryAfter = builder.retryAfter;
        ShedReason[] reasons = ShedReason.values();
        this.shedDecisions = new Decision[reasons.length];
        this.shedCounts = new LongAdder[reasons.length];
        for (ShedReason reason : reasons) {
            shedDecisions[reason.ordinal()] = Decision.shed(reason, retryAfter);
            shedCounts[reason.ordinal()] = new LongAdder();
        }
    }

    /**
     * Starts a builder. Set the limit with {@link Builder#capacity} (and optionally
     * {@link Builder#key}) or with one of the {@code limiter} overloads; everything else has a
     * default.
     *
     * <pre>{@code
     * AdmissionControl<ServerCall<?, ?>> gate = AdmissionControl.<ServerCall<?, ?>>builder().capacity(32).build();
     * }</pre>
     *
     * @param <R> the framework's request type
     * @return a new builder
     */
    public static <R> Builder<R> builder() {
        return new Builder<>();
    }

    // ------------------------------------------------------------------ the faces

    /**
     * Admits {@code request} if its permits are free now, else sheds it; never waits (for a
     * blocking servlet that must not park, or a {@code maxWait} of zero). A request that finds no
     * free permits (or finds others waiting: no barging) is shed as {@link ShedReason#QUEUE_FULL}.
     *
     * @param request the request
     * @return the decision: release its {@link Decision#admission()} when the response ends
     * @throws NullPointerException if {@code request} is null, or the key function returns null
     * @throws IllegalArgumentException if the cost function returns less than 1
     */
    public Decision tryAdmit(R request) {
        long n = costOf("tryAdmit", request);
        if (n > limiter.maxCost()) {
            return shed(ShedReason.COST_TOO_HIGH);
        }
        Permits permits;
        try {
            permits = limiter.tryAcquire(request, n);
        } catch (IllegalArgumentException e) {
            if (n > limiter.maxCost()) { // the capacity shrank since the check above
                return shed(ShedReason.COST_TOO_HIGH);
            }
            throw e;
        }
        if (permits == null) {
            return shed(limiter.isClosed() ? ShedReason.CLOSED : ShedReason.QUEUE_FULL);
        }
        return Decision.admitted(new Admission(permits, limiter));
    }

    /**
     * Admits {@code request} when its permits are granted, waiting at most {@code maxWait} in the
     * limit's queue; the future completes with the decision, never exceptionally for a shed
     * request: {@link ShedReason#QUEUE_FULL} if a queue bound refuses the wait,
     * {@link ShedReason#TIMED_OUT} after {@code maxWait}, {@link ShedReason#COST_TOO_HIGH},
     * {@link ShedReason#CLOSED}. With a {@code maxWait} of zero it is {@link #tryAdmit}'s decision.
     *
     * <p>Cancelling the future while the request waits withdraws the wait: nothing is held, no
     * permit is lost or made. If the grant arrives as the future is cancelled (or as the wait
     * times out), the permits go back at once, the request not admitted. So call {@code cancel} on
     * this future (when the client disconnects), never on a stage derived from it.
     *
     * <p>The future completes on the thread that grants the permits (the one releasing them), on
     * the calling thread if they are free now, or on the gate's timer thread when the wait times
     * out: a dependent stage that blocks should run on an executor of its own
     * ({@code thenAcceptAsync(.., executor)}).
     *
     * @param request the request
     * @return the future of the decision; release its {@link Decision#admission()} when the
     *     response ends
     * @throws NullPointerException if {@code request} is null, or the key function returns null
     * @throws IllegalArgumentException if the cost function returns less than 1
     */
    public CompletableFuture<Decision> admitAsync(R request) {
        if (maxWaitNanos == 0) {
            return CompletableFuture.completedFuture(tryAdmit(request));
        }
        long n = costOf("admitAsync", request);
        if (n > limiter.maxCost()) {
            return CompletableFuture.completedFuture(shed(ShedReason.COST_TOO_HIGH));
        }
        CompletableFuture<? extends Permits> grant;
        try {
            grant = limiter.acquireAsync(request, n);
        } catch (IllegalArgumentException e) {
            if (n > limiter.maxCost()) { // the capacity shrank since the check above
                return CompletableFuture.completedFuture(shed(ShedReason.COST_TOO_HIGH));
            }
            throw e;
        }
        CompletableFuture<Decision> decision = new CompletableFuture<>();
        grant.whenComplete((permits, failure) -> {
            if (failure == null) {
                Admission admission = new Admission(permits, limiter);
                if (!decision.complete(Decision.admitted(admission))) {
                    admission.abandon(); // cancelled or timed out while the grant was on its way
                }
                return;
            }
            Throwable cause = unwrap(failure);
            if (cause instanceof SemaphoreRejectedException) {
                settle(decision, ShedReason.QUEUE_FULL);
            } else if (cause instanceof SemaphoreClosedException) {
                settle(decision, ShedReason.CLOSED);
            } else if (cause instanceof CancellationException) {
                // Withdrawn by the timer (then the wait has left the queue before the decision is
                // seen) or because the decision was cancelled (then this changes nothing).
                if (settle(decision, ShedReason.TIMED_OUT)) {
                    limiter.recordRejection(n);
                }
            } else {
                decision.completeExceptionally(cause);
            }
        });
        if (grant.isDone()) {
            return decision;
        }
        ScheduledFuture<?> timer = Timer.EXECUTOR.schedule(
                () -> grant.cancel(false), // withdraws the wait first; the handler above then sheds
                maxWaitNanos,
                TimeUnit.NANOSECONDS);
        decision.whenComplete((d, failure) -> {
            timer.cancel(false);
            if (!grant.isDone()) {
                grant.cancel(false); // withdraws the wait; a grant that wins is abandoned above
            }
        });
        return decision;
    }

    /**
     * Admits {@code request} when its permits are granted, parking the calling thread (platform or
     * virtual) at most {@code maxWait}: {@link #admitAsync}'s decision, waited for. On interrupt
     * the wait is withdrawn and {@link InterruptedException} thrown, nothing held; if the grant won
     * that race, the admitted decision is returned with the interrupt flag set.
     *
     * @param request the request
     * @return the decision; release its {@link Decision#admission()} when the response ends
     * @throws InterruptedException if interrupted while waiting (nothing held)
     * @throws NullPointerException if {@code request} is null, or the key function returns null
     * @throws IllegalArgumentException if the cost function returns less than 1
     */
    public Decision admitBlocking(R request) throws InterruptedException {
        CompletableFuture<Decision> decision = admitAsync(request);
        try {
            return decision.get();
        } catch (InterruptedException interrupted) {
            if (decision.cancel(false)) {
                throw interrupted;
            }
            Thread.currentThread().interrupt();
            return decision.join();
        } catch (ExecutionException e) {
            throw new CompletionException(e.getCause());
        }
    }

    // ------------------------------------------------------------------ observers and control

    /**
     * Returns the primitive the permits come from: the {@link Semaphore} or
     * {@link FairShareSemaphore} the gate built or was given (an adaptive capacity's own), for
     * monitoring, for example with handoff-micrometer's
     * {@code SemaphoreMetrics.monitor(registry, gate.primitive())}.
     *
     * @return the primitive
     */
    public PrimitiveView primitive() {
        return limiter.primitive();
    }

    /**
     * Returns how many requests were shed for {@code reason} since the gate was built.
     *
     * @param reason the reason
     * @return the count (a sum of per-thread counters: a snapshot)
     * @throws NullPointerException if {@code reason} is null
     */
    public long shedCount(ShedReason reason) {
        if (reason == null) {
            throw new NullPointerException("shedCount(null): the reason is null");
        }
        return shedCounts[reason.ordinal()].sum();
    }

    /**
     * Returns the longest a request waits for its permits.
     *
     * @return the bound set by {@link Builder#maxWait(Duration)}, or its default
     */
    public Duration maxWait() {
        return maxWait;
    }

    /**
     * Returns the hint a shed request's client gets.
     *
     * @return the value set by {@link Builder#retryAfter(Duration)}, or its default
     */
    public Duration retryAfter() {
        return retryAfter;
    }

    /**
     * Closes the limit's primitive, shared ones too: requests waiting now and every later one are
     * shed as {@link ShedReason#CLOSED}; admitted requests keep their permits until released.
     */
    public void close() {
        limiter.close();
    }

    /**
     * Closes the limit's primitive as {@link #close()} does and returns a future that completes
     * when every admitted request has released its permits: a graceful drain before exit.
     *
     * @return a future completed when nothing is held any more
     */
    public CompletableFuture<Void> closeAsync() {
        return limiter.closeAsync();
    }

    /**
     * Describes the gate.
     *
     * @return for example {@code "AdmissionControl[maxWait=PT0.2S, retryAfter=PT1S, Semaphore[...]]"}
     */
    @Override
    public String toString() {
        return "AdmissionControl[maxWait=" + maxWait + ", retryAfter=" + retryAfter + ", " + limiter.primitive() + "]";
    }

    // ------------------------------------------------------------------ internals

    private long costOf(String call, R request) {
        if (request == null) {
            throw new NullPointerException(call + "(null): the request is null");
        }
        long n = cost.applyAsLong(request);
        if (n < 1) {
            throw new IllegalArgumentException(call + "(" + request + "): the cost function returned " + n
                    + "; a request's cost must be at least 1");
        }
        return n;
    }

    private Decision shed(ShedReason reason) {
        shedCounts[reason.ordinal()].increment();
        return shedDecisions[reason.ordinal()];
    }

    /** Completes {@code decision} as shed for {@code reason} and counts it, if nothing settled it first. */
    private boolean settle(CompletableFuture<Decision> decision, ShedReason reason) {
        LongAdder count = shedCounts[reason.ordinal()];
        count.increment(); // before the completion, whose dependents may read it at once
        if (!decision.complete(shedDecisions[reason.ordinal()])) {
            count.decrement();
            return false;
        }
        return true;
    }

    private static Throwable unwrap(Throwable failure) {
        Throwable t = failure;
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }

    // ------------------------------------------------------------------ builder

    /**
     * Configures an {@link AdmissionControl}. The limit is required: either {@link #capacity(long)}
     * (the gate builds a {@link Semaphore}, or with {@link #key} a {@link FairShareSemaphore}, with
     * the queue bounds and name set here), or one {@code limiter(..)} overload (a primitive built
     * by the caller, whose queue bounds and name are its own). Every other setting is optional.
     *
     * @param <R> the framework's request type
     */
    public static final class Builder<R> {
        private long capacity;
        private @Nullable Function<? super R, ?> key;
        private @Nullable ToLongFunction<?> share;
        private @Nullable Limiter<R> limiter;
        private @Nullable String limiterCall;
        private ToLongFunction<? super R> cost = request -> 1L;
        private Duration maxWait = Duration.ofSeconds(1);
        private Duration retryAfter = Duration.ofSeconds(1);
        private int maxQueueLength = -1;
        private long maxQueuedPermits = -1;
        private long maxQueuedPermitsPerKey = -1;
        private long maxPermitsPerKey = -1;
        private @Nullable String name;

        private Builder() {}

        /**
         * Sets a fixed capacity: the gate builds its own {@link Semaphore} (or, with {@link #key},
         * {@link FairShareSemaphore}) of {@code capacity} permits.
         *
         * @param capacity the permits, from 1 to {@link Semaphore#MAX_PERMITS}
         * @return this builder
         * @throws IllegalArgumentException if {@code capacity} is outside that range
         */
        public Builder<R> capacity(long capacity) {
            if (capacity < 1 || capacity > Semaphore.MAX_PERMITS) {
                throw new IllegalArgumentException(
                        "capacity(" + capacity + "): must be between 1 and " + Semaphore.MAX_PERMITS);
            }
            this.capacity = capacity;
            return this;
        }

        /**
         * Makes the capacity fair across keys: the gate builds a {@link FairShareSemaphore} in which
         * each request waits for its key's turn, and a key that floods waits behind its own backlog
         * while the others go ahead. Needs {@link #capacity(long)}; for a fair share built by the
         * caller, use {@link #limiter(Function, FairShareSemaphore)}.
         *
         * @param key the key of a request (a tenant, a client, a route); must not return null
         * @param share the weight of a key in the fair order, from 1 to
         *     {@link FairShareSemaphore#MAX_SHARE} ({@code k -> 1} for equal shares)
         * @param <K> the key type
         * @return this builder
         * @throws NullPointerException if {@code key} or {@code share} is null
         */
        public <K> Builder<R> key(Function<? super R, ? extends K> key, ToLongFunction<? super K> share) {
            if (key == null) {
                throw new NullPointerException("key(null, ..): the key function is null");
            }
            if (share == null) {
                throw new NullPointerException("key(.., null): the share function is null");
            }
            this.key = key;
            this.share = share;
            return this;
        }

        /**
         * Takes permits from {@code semaphore}, built by the caller (to share it, or to watch it
         * with its own name and listener); its queue bounds are its own.
         *
         * @param semaphore the semaphore
         * @return this builder
         * @throws NullPointerException if {@code semaphore} is null
         */
        public Builder<R> limiter(Semaphore semaphore) {
            if (semaphore == null) {
                throw new NullPointerException("limiter((Semaphore) null): the semaphore is null");
            }
            return limiter("limiter(" + semaphore + ")", Limiter.of(semaphore));
        }

        /**
         * Takes permits from {@code adaptive}'s semaphore, whose capacity it sizes from the measured
         * latency; each release tells it how the request ended. A request may cost up to its present
         * {@link AdaptiveCapacity#capacity()}; its queue bounds are those of its semaphore.
         *
         * @param adaptive the adaptive capacity
         * @return this builder
         * @throws NullPointerException if {@code adaptive} is null
         */
        public Builder<R> limiter(AdaptiveCapacity adaptive) {
            if (adaptive == null) {
                throw new NullPointerException("limiter((AdaptiveCapacity) null): the adaptive capacity is null");
            }
            return limiter("limiter(" + adaptive + ")", Limiter.of(adaptive));
        }

        /**
         * Takes permits from {@code fairShare}, built by the caller, for the key of each request; its
         * shares, caps and queue bounds are its own.
         *
         * @param key the key of a request; must not return null
         * @param fairShare the fair share
         * @param <K> the key type
         * @return this builder
         * @throws NullPointerException if {@code key} or {@code fairShare} is null
         */
        public <K> Builder<R> limiter(Function<? super R, ? extends K> key, FairShareSemaphore<K> fairShare) {
            if (key == null || fairShare == null) {
                throw new NullPointerException("limiter(" + (key == null ? "null" : "key") + ", "
                        + (fairShare == null ? "null" : "fairShare") + "): neither may be null");
            }
            return limiter("limiter(key, " + fairShare + ")", Limiter.of(key, fairShare));
        }

        /**
         * Takes permits from {@code adaptive}'s fair share for the key of each request; the adaptive
         * sizes the total capacity from the measured latency, and each release tells it how the
         * request ended. A request may cost up to its present {@link AdaptiveFairShare#capacity()} and
         * the per-key cap.
         *
         * @param key the key of a request; must not return null
         * @param adaptive the adaptive fair share
         * @param <K> the key type
         * @return this builder
         * @throws NullPointerException if {@code key} or {@code adaptive} is null
         */
        public <K> Builder<R> limiter(Function<? super R, ? extends K> key, AdaptiveFairShare<K> adaptive) {
            if (key == null || adaptive == null) {
                throw new NullPointerException("limiter(" + (key == null ? "null" : "key") + ", "
                        + (adaptive == null ? "null" : "adaptive") + "): neither may be null");
            }
            return limiter("limiter(key, " + adaptive + ")", Limiter.of(key, adaptive));
        }

        private Builder<R> limiter(String call, Limiter<R> chosen) {
            if (limiterCall != null) {
                throw new IllegalStateException(call + ": a limit is set already by " + limiterCall + "; set one");
            }
            this.limiterCall = call;
            this.limiter = chosen;
            return this;
        }

        /**
         * Sets the cost of a request in permits: a per-route weight, a size class of its body. A cost
         * above what the limit can ever grant sheds the request ({@link ShedReason#COST_TOO_HIGH});
         * a cost below 1 is a bug, thrown by the admitting call as {@link IllegalArgumentException}.
         * 1 for every request by default.
         *
         * @param cost the cost of a request; must not block
         * @return this builder
         * @throws NullPointerException if {@code cost} is null
         */
        public Builder<R> cost(ToLongFunction<? super R> cost) {
            if (cost == null) {
                throw new NullPointerException("cost(null): the cost function is null");
            }
            this.cost = cost;
            return this;
        }

        /**
         * Sets the longest a request waits for its permits before it is shed as
         * {@link ShedReason#TIMED_OUT}. Zero: never wait (a request admitted at once or shed).
         * 1 second by default.
         *
         * @param maxWait the bound, zero or positive
         * @return this builder
         * @throws NullPointerException if {@code maxWait} is null
         * @throws IllegalArgumentException if {@code maxWait} is negative
         */
        public Builder<R> maxWait(Duration maxWait) {
            if (maxWait == null) {
                throw new NullPointerException("maxWait(null): the duration is null");
            }
            if (maxWait.isNegative()) {
                throw new IllegalArgumentException("maxWait(" + maxWait + "): must not be negative (zero: never wait)");
            }
            this.maxWait = maxWait;
            return this;
        }

        /**
         * Sets the hint a shed request's client gets ({@link Decision#retryAfter()}, the HTTP
         * {@code Retry-After} header). 1 second by default.
         *
         * @param retryAfter the hint, zero or positive
         * @return this builder
         * @throws NullPointerException if {@code retryAfter} is null
         * @throws IllegalArgumentException if {@code retryAfter} is negative
         */
        public Builder<R> retryAfter(Duration retryAfter) {
            if (retryAfter == null) {
                throw new NullPointerException("retryAfter(null): the duration is null");
            }
            if (retryAfter.isNegative()) {
                throw new IllegalArgumentException("retryAfter(" + retryAfter + "): must not be negative");
            }
            this.retryAfter = retryAfter;
            return this;
        }

        /**
         * Bounds how many requests may wait, as {@code maxQueueLength} on the primitive's builder:
         * beyond it a request that would wait is shed as {@link ShedReason#QUEUE_FULL}. Only with
         * {@link #capacity(long)}. Unbounded by default.
         *
         * @param k the most waiting requests, {@code >= 0}
         * @return this builder
         * @throws IllegalArgumentException if {@code k < 0}
         */
        public Builder<R> maxQueueLength(int k) {
            if (k < 0) {
                throw new IllegalArgumentException("maxQueueLength(" + k + "): must not be negative");
            }
            this.maxQueueLength = k;
            return this;
        }

        /**
         * Bounds the permits that may wait, over all requests (and keys), as
         * {@code maxQueuedPermits} on the primitive's builder: beyond it a request that would wait
         * is shed as {@link ShedReason#QUEUE_FULL}. Only with {@link #capacity(long)}. Unbounded by
         * default.
         *
         * @param q the bound, {@code >= 0}
         * @return this builder
         * @throws IllegalArgumentException if {@code q < 0}
         */
        public Builder<R> maxQueuedPermits(long q) {
            if (q < 0) {
                throw new IllegalArgumentException("maxQueuedPermits(" + q + "): must not be negative");
            }
            this.maxQueuedPermits = q;
            return this;
        }

        /**
         * Bounds the permits that may wait for one key, as
         * {@link FairShareSemaphore.Builder#maxQueuedPermitsPerKey(long)}: a key that floods is shed
         * ({@link ShedReason#QUEUE_FULL}) while the others still queue. Only with
         * {@link #capacity(long)} and {@link #key}. Unbounded by default.
         *
         * @param q the bound, {@code >= 0}
         * @return this builder
         * @throws IllegalArgumentException if {@code q < 0}
         */
        public Builder<R> maxQueuedPermitsPerKey(long q) {
            if (q < 0) {
                throw new IllegalArgumentException("maxQueuedPermitsPerKey(" + q + "): must not be negative");
            }
            this.maxQueuedPermitsPerKey = q;
            return this;
        }

        /**
         * Caps the permits one key may hold at once, as
         * {@link FairShareSemaphore.Builder#maxPermitsPerKey(long)}; a request costing more is shed
         * as {@link ShedReason#COST_TOO_HIGH}. Only with {@link #capacity(long)} and {@link #key}.
         * No cap by default.
         *
         * @param max the cap, {@code >= 1}
         * @return this builder
         * @throws IllegalArgumentException if {@code max < 1}
         */
        public Builder<R> maxPermitsPerKey(long max) {
            if (max < 1) {
                throw new IllegalArgumentException("maxPermitsPerKey(" + max + "): must be at least 1");
            }
            this.maxPermitsPerKey = max;
            return this;
        }

        /**
         * Names the primitive the gate builds: shown by its {@code toString()}, the default tag of
         * its metrics and its JFR events. Only with {@link #capacity(long)}.
         *
         * @param name the name
         * @return this builder
         * @throws NullPointerException if {@code name} is null
         */
        public Builder<R> name(String name) {
            if (name == null) {
                throw new NullPointerException("name(null): the name is null");
            }
            this.name = name;
            return this;
        }

        /**
         * Builds the gate; with {@link #capacity(long)}, builds its primitive too.
         *
         * @return a new gate
         * @throws IllegalStateException if no limit is set, if both {@link #capacity(long)} and a
         *     {@code limiter(..)} are, if {@link #key} is set without {@code capacity}, if a queue
         *     bound or name is set with a {@code limiter(..)} (set it on that primitive's builder),
         *     or if a per-key setting is set without a key
         */
        public AdmissionControl<R> build() {
            Limiter<R> chosen = limiter;
            if (chosen != null) {
                if (capacity > 0) {
                    throw new IllegalStateException(
                            "build(): both capacity(" + capacity + ") and " + limiterCall + " set the limit; set one");
                }
                if (key != null) {
                    throw new IllegalStateException("build(): key(..) is for capacity(..); " + limiterCall
                            + " brings its own limit (pass the key with limiter(key, fairShare))");
                }
                String own = ownSetting();
                if (own != null) {
                    throw new IllegalStateException("build(): " + own + " applies to the primitive the gate builds"
                            + " with capacity(..); set it on the builder of the primitive given to " + limiterCall);
                }
                return new AdmissionControl<>(chosen, this);
            }
            if (capacity == 0) {
                throw new IllegalStateException(
                        "build(): no limit; set capacity(..) or give a primitive with limiter(..)");
            }
            return new AdmissionControl<>(key != null ? fairShare(key) : semaphore(), this);
        }

        private @Nullable String ownSetting() {
            if (maxQueueLength >= 0) {
                return "maxQueueLength(" + maxQueueLength + ")";
            }
            if (maxQueuedPermits >= 0) {
                return "maxQueuedPermits(" + maxQueuedPermits + ")";
            }
            if (maxQueuedPermitsPerKey >= 0) {
                return "maxQueuedPermitsPerKey(" + maxQueuedPermitsPerKey + ")";
            }
            if (maxPermitsPerKey >= 0) {
                return "maxPermitsPerKey(" + maxPermitsPerKey + ")";
            }
            if (name != null) {
                return "name(" + name + ")";
            }
            return null;
        }

        private Limiter<R> semaphore() {
            if (maxQueuedPermitsPerKey >= 0 || maxPermitsPerKey >= 0) {
                throw new IllegalStateException("build(): "
                        + (maxPermitsPerKey >= 0
                                ? "maxPermitsPerKey(" + maxPermitsPerKey + ")"
                                : "maxQueuedPermitsPerKey(" + maxQueuedPermitsPerKey + ")")
                        + " needs a key; set key(..)");
            }
            Semaphore.Builder b = Semaphore.builder(capacity);
            if (maxQueueLength >= 0) {
                b.maxQueueLength(maxQueueLength);
            }
            if (maxQueuedPermits >= 0) {
                b.maxQueuedPermits(maxQueuedPermits);
            }
            if (name != null) {
                b.name(name);
            }
            return Limiter.of(b.build());
        }

        @SuppressWarnings("unchecked") // key(..) took the key and share functions of one key type
        private Limiter<R> fairShare(Function<? super R, ?> keys) {
            FairShareSemaphore.Builder<Object> b = FairShareSemaphore.builder(capacity);
            b.share((ToLongFunction<Object>) share);
            if (maxQueueLength >= 0) {
                b.maxQueueLength(maxQueueLength);
            }
            if (maxQueuedPermits >= 0) {
                b.maxQueuedPermits(maxQueuedPermits);
            }
            if (maxQueuedPermitsPerKey >= 0) {
                b.maxQueuedPermitsPerKey(maxQueuedPermitsPerKey);
            }
            if (maxPermitsPerKey >= 0) {
                b.maxPermitsPerKey(maxPermitsPerKey);
            }
            if (name != null) {
                b.name(name);
            }
            return Limiter.of(keys, b.build());
        }
    }
}
