// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import dev.handoff.Permits;
import dev.handoff.SemaphoreRejectedException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The engine behind {@link AdaptiveCapacity} and {@link AdaptiveFairShare}: times and classifies
 * every sampled use of permits taken through its {@link Gate}, feeds the samples to the
 * {@link Controller}, and applies the controller's capacity to the gate, within the bounds. The two
 * public classes are faces over one engine each: they check nothing and sample nothing themselves,
 * so a semaphore and a fair share are sampled by the very same code.
 *
 * <p>Concurrency: {@code inFlight} takes an atomic add from every sampling thread; {@code target}
 * is written by the controller's thread of the moment ({@link #apply}: one closer at a time for the
 * built-in algorithm, the {@code Limit}'s own lock for the bridge) and read by anyone.
 *
 * @param <K> the key type of the gate ({@code Void} with {@code null} keys for a {@code Semaphore})
 */
final class Sampler<K extends @Nullable Object> {

    private final Gate<K> gate;
    private final long minCapacity;
    private final long maxCapacity;
    private final LongSupplier clock;
    private final Controller controller;
    private final @Nullable Function<? super Throwable, Outcome> classifier;
    private final CapacityListener[] listeners;
    /** Changes not yet told to the listeners: added by whoever changes the target, taken by the deliverer. */
    private final ConcurrentLinkedQueue<Change> changes = new ConcurrentLinkedQueue<>();
    /** 1 while a thread tells the listeners (so that they hear the changes one at a time, in order). */
    private volatile int delivering;
    /** Drops sampled since build: an atomic add per drop. */
    private volatile long drops;
    /** The present target; written by the controller's thread of the moment (see apply). */
    private volatile long target;
    /** Permits held through this engine: atomic adds by every caller. */
    private volatile long inFlight;

    Sampler(Gate<K> gate, Settings settings) {
        this.gate = gate;
        this.minCapacity = settings.minCapacity;
        this.maxCapacity = settings.effectiveMaxCapacity();
        this.clock = settings.clock;
        this.classifier = settings.classifier;
        this.listeners = settings.listeners.toArray(new CapacityListener[0]);
        Object limit = settings.limit;
        long before = gate.capacity();
        long start = limit != null ? LimitBridge.initial(limit) : before;
        this.target = clamp(start);
        gate.setCapacity(target);
        if (target != before && listeners.length > 0) {
            changes.add(new Change(
                    before, target, target != start ? CapacityListener.Reason.BOUNDS : CapacityListener.Reason.LIMIT));
        }
        this.controller = limit != null
                ? new LimitBridge(limit, this)
                : new BaselineGradient(
                        this, target, settings.windowNanos, settings.tolerance, settings.smoothing, clock.getAsLong());
        deliver();
    }

    long capacity() {
        return target;
    }

    long minCapacity() {
        return minCapacity;
    }

    long maxCapacity() {
        return maxCapacity;
    }

    long inFlight() {
        return inFlight;
    }

    long drops() {
        return drops;
    }

    /** Whether a request waits for the shared capacity (for the built-in algorithm's "in use"). */
    boolean demandWaits() {
        return gate.demandWaits();
    }

    /** The controller, for tests in this package. */
    Controller controller() {
        return controller;
    }

    /**
     * The outcome of work that threw {@code thrown} (unwrapped from completion and execution
     * exceptions): the builder's classifier, else {@link Outcome#of}. A classifier that returns
     * {@code null} or {@link Outcome#REJECTED} gives {@link Outcome#FAILURE}; one that throws gives
     * {@code FAILURE} too, its exception added to {@code thrown} as suppressed (reported, not lost).
     */
    Outcome classify(Throwable thrown) {
        if (thrown == null) {
            throw new NullPointerException("classify(null): nothing was thrown");
        }
        if (classifier == null) {
            return Outcome.of(thrown);
        }
        Outcome outcome;
        try {
            outcome = classifier.apply(Outcome.unwrap(thrown));
        } catch (RuntimeException | Error e) {
            thrown.addSuppressed(e);
            return Outcome.FAILURE;
        }
        return outcome == null || outcome == Outcome.REJECTED ? Outcome.FAILURE : outcome;
    }

    // ------------------------------------------------------------------ the faces

    <T extends @Nullable Object> T withPermitsBlocking(K key, long n, @Nullable Callable<T> body) throws Exception {
        check("withPermitsBlocking", key, n);
        if (body == null) {
            throw new NullPointerException(
                    "withPermitsBlocking(" + gate.arguments(key, n) + ", null): the body is null");
        }
        if (!gate.tryAcquire(key, n)) {
            acquireSlow(key, n);
        }
        long held = addInFlight(n);
        controller.acquired(held);
        long start = clock.getAsLong();
        Outcome outcome = Outcome.FAILURE;
        try {
            T result = body.call();
            outcome = Outcome.SUCCESS;
            return result;
        } catch (Throwable t) {
            outcome = classify(t);
            throw t;
        } finally {
            end(key, n, start, held, outcome);
        }
    }

    private void acquireSlow(K key, long n) throws InterruptedException {
        try {
            gate.acquireBlocking(key, n); // released by count in end()
        } catch (SemaphoreRejectedException rejected) {
            recordRejection(n);
            throw rejected;
        }
    }

    <T extends @Nullable Object> CompletableFuture<T> withPermitsAsync(
            K key, long n, @Nullable Supplier<? extends CompletionStage<T>> body) {
        check("withPermitsAsync", key, n);
        if (body == null) {
            throw new NullPointerException("withPermitsAsync(" + gate.arguments(key, n) + ", null): the body is null");
        }
        WithdrawingResult<T> result = new WithdrawingResult<>();
        if (gate.tryAcquire(key, n)) {
            runAsync(key, n, body, result);
            return result;
        }
        whenGranted(key, n, result, () -> runAsync(key, n, body, result));
        return result;
    }

    /**
     * Waits for {@code n} permits for {@code result}, as the gate's {@code acquireAsync}: on the
     * grant runs {@code granted}, unless {@code result} is done already (then gives them back, not
     * sampled); a failure of the wait fails {@code result} (a rejection is recorded); when
     * {@code result} is cancelled or failed from outside, the wait is withdrawn first (see
     * {@link WithdrawingResult}).
     */
    private void whenGranted(K key, long n, WithdrawingResult<?> result, Runnable granted) {
        CompletableFuture<Permits> grant = gate.acquireAsync(key, n);
        result.waitsOn(grant);
        grant.whenComplete((permits, failure) -> {
            if (failure != null) {
                if (result.withdrawnByThis()) {
                    return; // the withdrawing call completes result with its own outcome
                }
                if (Outcome.unwrap(failure) instanceof SemaphoreRejectedException) {
                    recordRejection(n);
                }
                result.completeExceptionally(Outcome.unwrap(failure));
            } else if (result.isDone()) {
                permits.release(); // cancelled while the grant was on its way: not run, not sampled
            } else {
                granted.run();
            }
        });
        result.whenComplete((value, failure) -> {
            if (!grant.isDone()) {
                // result completed before waitsOn could withdraw: withdraws the wait now; a grant
                // that wins is released above
                grant.cancel(false);
            }
        });
    }

    private <T> void runAsync(K key, long n, Supplier<? extends CompletionStage<T>> body, CompletableFuture<T> result) {
        long held = addInFlight(n);
        controller.acquired(held);
        long start = clock.getAsLong();
        CompletionStage<T> stage;
        try {
            stage = body.get();
        } catch (Throwable t) {
            end(key, n, start, held, classify(t));
            result.completeExceptionally(t);
            return;
        }
        if (stage == null) {
            end(key, n, start, held, Outcome.FAILURE);
            result.completeExceptionally(new NullPointerException(
                    "withPermitsAsync(" + gate.arguments(key, n) + "): the body returned null"));
            return;
        }
        stage.whenComplete((value, failure) -> {
            try {
                end(key, n, start, held, failure == null ? Outcome.SUCCESS : classify(failure));
            } finally {
                if (failure == null) {
                    result.complete(value);
                } else {
                    result.completeExceptionally(Outcome.unwrap(failure));
                }
            }
        });
    }

    SampledPermits acquireBlocking(K key, long n) throws InterruptedException {
        check("acquireBlocking", key, n);
        if (!gate.tryAcquire(key, n)) {
            acquireSlow(key, n);
        }
        return sampleFrom(key, n);
    }

    CompletableFuture<SampledPermits> acquireAsync(K key, long n) {
        check("acquireAsync", key, n);
        if (gate.tryAcquire(key, n)) {
            return CompletableFuture.completedFuture(sampleFrom(key, n));
        }
        WithdrawingResult<SampledPermits> result = new WithdrawingResult<>();
        whenGranted(key, n, result, () -> {
            if (!result.complete(sampleFrom(key, n))) { // lost a race with a cancel: given back, not sampled
                INFLIGHT.getAndAdd(this, -n);
                gate.release(key, n);
            }
        });
        return result;
    }

    @Nullable
    SampledPermits tryAcquire(K key, long n) {
        check("tryAcquire", key, n);
        if (gate.tryAcquire(key, n)) {
            return sampleFrom(key, n);
        }
        if (!gate.refusedByKeyLimit(key, n)) {
            recordRejection(n);
        }
        return null;
    }

    SampledPermits startSample(K key, long n) {
        check("startSample", key, n);
        return sampleFrom(key, n);
    }

    private SampledPermits sampleFrom(K key, long n) {
        long held = addInFlight(n);
        controller.acquired(held);
        return new Sample<>(this, key, n, clock.getAsLong(), held);
    }

    void recordRejection(long n) {
        if (n < 0) {
            throw new IllegalArgumentException(
                    "recordRejection(" + n + "): the number of permits must not be negative");
        }
        long now = clock.getAsLong();
        controller.sample(now, now, n, 0, Outcome.REJECTED);
        deliver();
    }

    /** The end of a sampled use: permits back to the gate, then the sample. */
    void end(K key, long n, long start, long held, Outcome outcome) {
        long end = clock.getAsLong();
        INFLIGHT.getAndAdd(this, -n);
        try {
            gate.release(key, n);
        } finally {
            if (outcome == Outcome.DROPPED) {
                DROPS.getAndAdd(this, 1L);
            }
            controller.sample(start, end, n, held, outcome);
            deliver();
        }
    }

    /**
     * Sets the target: clamps it into the bounds, rounds it, and sets the gate's capacity if it
     * changed. Called by the controller (one thread at a time for the built-in one; under the
     * Limit's own lock for the bridge). Returns the clamped value (unrounded).
     */
    double apply(double next, CapacityListener.Reason reason) {
        double clamped = Math.max(minCapacity, Math.min(maxCapacity, next));
        long rounded = Math.round(clamped);
        long old = target;
        if (rounded != old) {
            target = rounded;
            gate.setCapacity(rounded);
            if (listeners.length > 0) {
                changes.add(new Change(old, rounded, reason));
            }
        }
        return clamped;
    }

    /**
     * Tells the listeners the changes made so far, outside every lock: called by a sampling thread
     * once the controller returned (and by the bridge when a limit moves outside its own lock). One
     * thread at a time delivers, in order; a change queued while another thread delivers is
     * delivered by that thread's loop or by this one's next check. A listener that throws is
     * reported to the thread's uncaught-exception handler; the others still hear the change.
     */
    void deliver() {
        if (listeners.length == 0) {
            return;
        }
        while (!changes.isEmpty() && DELIVERING.compareAndSet(this, 0, 1)) {
            try {
                Change c;
                while ((c = changes.poll()) != null) {
                    for (CapacityListener l : listeners) {
                        try {
                            l.capacityChanged(c.from, c.to, c.reason);
                        } catch (Throwable t) {
                            report(t);
                        }
                    }
                }
            } finally {
                delivering = 0;
            }
        }
    }

    private static void report(Throwable t) {
        Thread me = Thread.currentThread();
        try {
            me.getUncaughtExceptionHandler().uncaughtException(me, t);
        } catch (Throwable ignored) {
            // The handler itself failed; nothing sensible is left to do with the error.
        }
    }

    /** One change of the target, waiting to be told to the listeners. */
    private record Change(long from, long to, CapacityListener.Reason reason) {}

    private long clamp(long value) {
        return Math.max(minCapacity, Math.min(maxCapacity, value));
    }

    /**
     * The checks of every face: {@code n} within {@code 0..capacity} (the present target), then the
     * gate's own (the key). Package-private for the Kotlin faces, which check before they suspend.
     */
    void check(String call, K key, long n) {
        long capacity = target;
        if (n < 0 || n > capacity) {
            throw new IllegalArgumentException(call + "(" + gate.arguments(key, n)
                    + "): the number of permits must be between 0 and the present capacity (" + capacity + ")");
        }
        gate.checkKey(call, key, n);
    }

    private long addInFlight(long n) {
        return (long) INFLIGHT.getAndAdd(this, n) + n;
    }

    /** The state for the faces' {@code toString()}: {@code capacity=42, min=1, max=1000, inFlight=40, <algorithm>}. */
    String describe() {
        return "capacity=" + target + ", min=" + minCapacity + ", max=" + maxCapacity + ", inFlight=" + inFlight + ", "
                + controller;
    }

    /** The handle of a sampled use. */
    private static final class Sample<K extends @Nullable Object> implements SampledPermits {
        private static final int FAILED = 1;
        private static final int DROPPED = 2;
        private static final int MARKS = 3;
        private static final int RELEASED = 4;

        private final Sampler<K> owner;
        private final K key;
        private final long permits;
        private final long start;
        private final long held;
        /** The mark (0, FAILED or DROPPED), plus RELEASED once released: marks and the release CAS it. */
        private volatile int state;

        Sample(Sampler<K> owner, K key, long permits, long start, long held) {
            this.owner = owner;
            this.key = key;
            this.permits = permits;
            this.start = start;
            this.held = held;
        }

        @Override
        public long permits() {
            return permits;
        }

        @Override
        public boolean release() {
            int s;
            do {
                s = state;
                if ((s & RELEASED) != 0) {
                    return false;
                }
            } while (!STATE.compareAndSet(this, s, s | RELEASED));
            owner.end(key, permits, start, held, outcomeOf(s));
            return true;
        }

        @Override
        public boolean isReleased() {
            return (state & RELEASED) != 0;
        }

        @Override
        public void markFailure() {
            mark(FAILED, "markFailure()");
        }

        @Override
        public void markDropped() {
            mark(DROPPED, "markDropped()");
        }

        private void mark(int mark, String call) {
            int s;
            do {
                s = state;
                if ((s & RELEASED) != 0) {
                    throw new IllegalStateException(
                            call + ": the " + permits + " permits were already released and sampled as " + outcomeOf(s)
                                    + "; mark before closing");
                }
            } while (!STATE.compareAndSet(this, s, mark));
        }

        @Override
        public Outcome outcome() {
            return outcomeOf(state);
        }

        private static Outcome outcomeOf(int state) {
            int mark = state & MARKS;
            return mark == FAILED ? Outcome.FAILURE : mark == DROPPED ? Outcome.DROPPED : Outcome.SUCCESS;
        }

        @Override
        public String toString() {
            return "SampledPermits[" + (key == null ? "" : key + ", ") + permits + ", "
                    + (isReleased() ? "released, " : "held, ") + outcome() + "]";
        }

        private static final VarHandle STATE;

        static {
            try {
                STATE = MethodHandles.lookup().findVarHandle(Sample.class, "state", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }
    }

    // VarHandle mechanics
    private static final VarHandle INFLIGHT;
    private static final VarHandle DROPS;
    private static final VarHandle DELIVERING;

    static {
        try {
            INFLIGHT = MethodHandles.lookup().findVarHandle(Sampler.class, "inFlight", long.class);
            DROPS = MethodHandles.lookup().findVarHandle(Sampler.class, "drops", long.class);
            DELIVERING = MethodHandles.lookup().findVarHandle(Sampler.class, "delivering", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
