// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/**
 * One weighted capacity shared fairly across keys (tenants, users, queues): strictly FIFO within a
 * key, weighted fair queuing across keys. One tenant that floods thousands of requests does not make
 * the others wait behind all of them: while several keys wait, the permits granted to each track
 * its share.
 *
 * <p><b>Semantics.</b> Every key has a <em>share</em>, a positive weight given by the function of
 * {@link Builder#share(java.util.function.ToLongFunction)} (default 1), read when the key becomes
 * active (when it starts to hold or wait after holding and waiting for nothing), and optionally a
 * cap on the permits it may hold at once ({@link Builder#maxPermitsPerKey(long)}). Within a key,
 * the rules of {@link Semaphore} hold unchanged: FIFO, direct handoff, partial assignment, a heavy
 * request blocks the lighter ones behind it, cancellation returns the partial permits. Across keys,
 * the waiting keys are served in the order of their virtual start tags (start-time fair queuing):
 * a key's next request is tagged with the larger of the system's virtual time and the virtual time
 * at which its previous grant finished, each grant of {@code n} permits to a waiting request
 * advancing that key's virtual time by {@code n / share} (a grant made at once, when nothing that
 * could be served was waiting, took nobody's turn and is not charged). So while keys {@code a} and {@code b} both wait, the permits granted to
 * them, divided by their shares, differ by at most one largest request of each divided by its share:
 * {@code |granted(a)/share(a) - granted(b)/share(b)| <= maxRequest(a)/share(a) + maxRequest(b)/share(b)}.
 * A key that was idle starts at the current virtual time: it cannot bank credit while idle.
 * <ul>
 *   <li><b>Work-conserving</b>: a lone waiting key gets the whole capacity; a key is passed over
 *       only while its cap forbids it more.</li>
 *   <li><b>Starvation-free</b>: the request first in order that does not fit yet receives the
 *       released permits partially and blocks the others until it fits, however heavy it is.</li>
 *   <li><b>No barging</b>: {@link #tryAcquire(Object, long)} and the immediate grant of every face
 *       succeed only if no request waits that could be served (the only exception being requests of
 *       keys held back by their cap), and the permits are free.</li>
 *   <li>A key that holds nothing and waits for nothing costs no memory.</li>
 * </ul>
 *
 * <p>The faces are those of {@link Semaphore}: immediate ({@link #tryAcquire(Object, long)}),
 * callback ({@link #acquireThen(Object, long, Waker)}), future
 * ({@link #acquireAsync(Object, long)}), blocking ({@link #acquireBlocking(Object, long)},
 * {@link #tryAcquireBlocking(Object, long, Duration)}) and, in {@code handoff-kotlin}, suspending
 * ({@code acquire(key, n)}, {@code withPermits(key, n) { }}). Permits are returned to their key
 * with {@link #release(Object, long)} or by the {@link Permits} handle, which knows its key.
 *
 * <pre>{@code
 * FairShareSemaphore<String> database = FairShareSemaphore.<String>builder(32)
 *         .share(tenant -> tenant.startsWith("premium-") ? 4 : 1)
 *         .maxPermitsPerKey(16)
 *         .build();
 *
 * try (Permits p = database.acquireBlocking(request.tenant(), 1)) {
 *     runQuery(request);
 * }
 * }</pre>
 *
 * <p><b>Cancellation, close, capacity, shedding</b> work as on {@link Semaphore}: a cancelled or
 * timed-out wait holds nothing (the permits handed to it go on); {@link #close()} fails every
 * waiter; {@link #setCapacity(long)} and {@link #addCapacity(long)} grow at once and shrink with
 * debt; the queue bounds of the builder refuse at once with {@link SemaphoreRejectedException}.
 *
 * <p><b>Memory consistency effects</b>: a {@link #release(Object, long)} happens-before the
 * completion of every acquisition it grants.
 *
 * @param <K> the key type; keys are compared with {@code equals} and {@code hashCode}
 */
public final class FairShareSemaphore<K> implements PrimitiveView {

    /*
     * How the fair share is built
     * ===========================
     * This file is the public face: the builder and the faces, which check their arguments
     * (FairShareChecks) and hand the request to the part that owns the data it changes.
     * FairShareScheduler owns the lock, the keys, the waiting counts and the dispatched ticket,
     * runs every section and hands one waiting request at a time, in fair order, to the core (one
     * FifoCore of the total capacity, which holds the permits). StartTags owns virtual time
     * and the start tags that make the order fair (with the proof of the bound); KeyHeap, the keys
     * whose head may be dispatched; KeyState, one key's counts and queue of FairShareTickets (one
     * per waiting request; FairShareFuture is the future face's waker); SettledTickets, the tickets
     * a section settled, woken after the lock; FairShareSolo, the lock-free path of a lone key.
     */

    /** The largest share a key may have (2^32). */
    public static final long MAX_SHARE = 1L << 32;

    private final FairShareScheduler<K> scheduler;
    /** The scheduler's core: holds the permits. */
    private final FifoCore core;
    /** The scheduler's lock-free path (solo mode). */
    private final FairShareSolo<K> solo;

    private final long maxPermitsPerKey;
    private final @Nullable String name;

    /** The leak detection of its handles ({@link LeakDetection}), or null while it is off. */
    private final @Nullable LeakDetection leaks;

    private FairShareSemaphore(Builder<K> b) {
        this.scheduler = new FairShareScheduler<>(
                this,
                b.capacity,
                b.share,
                b.maxPermitsPerKey,
                b.maxQueuedPermitsPerKey,
                b.maxQueuedPermits,
                b.maxQueueLength,
                b.listener);
        this.core = scheduler.core;
        this.solo = scheduler.solo;
        this.maxPermitsPerKey = b.maxPermitsPerKey;
        this.name = b.name;
        LeakDetection mode = b.leakDetection == null ? LeakDetection.DEFAULT : b.leakDetection;
        this.leaks = mode == LeakDetection.OFF ? null : mode;
    }

    /**
     * Returns a builder for a fair share of {@code capacity} permits.
     *
     * <pre>{@code
     * FairShareSemaphore<String> pool = FairShareSemaphore.<String>builder(16).share(t -> 1).build();
     * }</pre>
     *
     * @param capacity the total number of permits, shared by every key
     * @param <K> the key type
     * @return a builder
     * @throws IllegalArgumentException if {@code capacity < 0} or {@code capacity > Semaphore.MAX_PERMITS}
     */
    public static <K> Builder<K> builder(long capacity) {
        if (capacity < 0 || capacity > FifoCore.MAX_PERMITS) {
            throw new IllegalArgumentException("builder(" + capacity
                    + "): the capacity must be between 0 and MAX_PERMITS (" + FifoCore.MAX_PERMITS + ")");
        }
        return new Builder<>(capacity);
    }

    /**
     * The options of a {@link FairShareSemaphore}; every one is optional.
     *
     * @param <K> the key type
     */
    public static final class Builder<K>
            extends PrimitiveBuilder<Builder<K>, FairShareListener<? super K>, FairShareSemaphore<K>> {
        private final long capacity;
        private ToLongFunction<? super K> share = key -> 1L;
        private long maxPermitsPerKey = Long.MAX_VALUE;
        private long maxQueuedPermitsPerKey = Long.MAX_VALUE;
        private long maxQueuedPermits = Long.MAX_VALUE;
        private @Nullable LeakDetection leakDetection;

        private Builder(long capacity) {
            this.capacity = capacity;
        }

        /**
         * Sets each key's share: its weight in the fair order, from 1 to {@link #MAX_SHARE}. Read when
         * a key becomes active (starts to hold or wait after holding and waiting for nothing), so a
         * function whose answer changes takes effect at the key's next activation. A value out of
         * range makes that acquisition fail with {@link IllegalArgumentException}, nothing changed.
         *
         * <pre>{@code
         * .share(tenant -> plans.get(tenant) == Plan.ENTERPRISE ? 4 : 1)
         * }</pre>
         *
         * @param share the share of a key; must not block nor call into this semaphore
         * @return this builder
         * @throws NullPointerException if {@code share} is null
         */
        public Builder<K> share(ToLongFunction<? super K> share) {
            this.share = Objects.requireNonNull(share, "share(null): the function is null");
            return this;
        }

        /**
         * Caps the permits one key may hold at once. A key at its cap waits (and is passed over by
         * the others) until it releases; a request heavier than the cap is refused at once.
         *
         * @param max the cap, at least 1 (default: none)
         * @return this builder
         * @throws IllegalArgumentException if {@code max < 1}
         */
        public Builder<K> maxPermitsPerKey(long max) {
            if (max < 1) {
                throw new IllegalArgumentException("maxPermitsPerKey(" + max + "): must be at least 1");
            }
            this.maxPermitsPerKey = max;
            return this;
        }

        /**
         * Bounds the weight that may wait for one key; beyond it an acquisition that would have to
         * wait is refused at once ({@link SemaphoreRejectedException}), nothing queued.
         *
         * @param q the bound, {@code 0} for "never queue" (default: none)
         * @return this builder
         * @throws IllegalArgumentException if {@code q < 0}
         */
        public Builder<K> maxQueuedPermitsPerKey(long q) {
            if (q < 0) {
                throw new IllegalArgumentException("maxQueuedPermitsPerKey(" + q + "): must not be negative");
            }
            this.maxQueuedPermitsPerKey = q;
            return this;
        }

        /**
         * Bounds the weight that may wait, over all keys; as {@link Semaphore.Builder#maxQueuedPermits(long)}.
         *
         * @param q the bound, {@code 0} for "never queue" (default: none)
         * @return this builder
         * @throws IllegalArgumentException if {@code q < 0}
         */
        public Builder<K> maxQueuedPermits(long q) {
            if (q < 0) {
                throw new IllegalArgumentException("maxQueuedPermits(" + q + "): must not be negative");
            }
            this.maxQueuedPermits = q;
            return this;
        }

        /**
         * Sets what the fair share does about a {@link Permits} handle (of
         * {@link FairShareSemaphore#acquireBlocking(Object, long)} or
         * {@link FairShareSemaphore#acquireAsync(Object, long)}) that becomes unreachable while it
         * holds permits, as {@link TrackedBuilder#leakDetection(LeakDetection)} does for the other
         * primitives (see {@link LeakDetection}): nothing
         * ({@link LeakDetection#OFF}), report where it was acquired ({@link LeakDetection#REPORT}),
         * or report and give its permits back to its key ({@link LeakDetection#RELEASE}). By
         * default, what the system property {@value LeakDetection#PROPERTY} says, else off.
         *
         * <pre>{@code
         * FairShareSemaphore<String> pool = FairShareSemaphore.<String>builder(16)
         *         .leakDetection(LeakDetection.REPORT)
         *         .build();
         * }</pre>
         *
         * @param mode what to do about a leaked handle
         * @return this builder
         * @throws NullPointerException if {@code mode} is null
         */
        public Builder<K> leakDetection(LeakDetection mode) {
            if (mode == null) {
                throw new NullPointerException("leakDetection(null): the mode is null");
            }
            this.leakDetection = mode;
            return this;
        }

        /**
         * Builds the semaphore.
         *
         * @return a new fair share with all its permits free
         */
        @Override
        public FairShareSemaphore<K> build() {
            return new FairShareSemaphore<>(this);
        }
    }

    // ------------------------------------------------------------------ observers

    /**
     * Returns the total capacity.
     *
     * @return the capacity, shared by every key
     */
    public long capacity() {
        return core.capacity;
    }

    /**
     * Returns the free permits: held by no key and not handed to a waiting request; {@code 0} while
     * a request waits that could be served (requests held back only by their key's cap do not count).
     *
     * @return a snapshot of the free permits
     */
    public long availablePermits() {
        return scheduler.availablePermits();
    }

    /**
     * Returns the permits {@code key} holds (granted and not released).
     *
     * @param key the key
     * @return a snapshot; {@code 0} for a key that holds nothing
     * @throws NullPointerException if {@code key} is null
     */
    public long heldPermits(K key) {
        Objects.requireNonNull(key, "heldPermits(null): the key is null");
        return scheduler.heldPermits(key);
    }

    /**
     * Returns the permits the waiting acquisitions wait for, over all keys (saturated at
     * {@code Long.MAX_VALUE}).
     *
     * @return a snapshot
     */
    @Override
    public long queuedPermits() {
        return scheduler.queuedPermits();
    }

    /**
     * Returns how many acquisitions wait, over all keys.
     *
     * @return a snapshot
     */
    @Override
    public int queueLength() {
        return scheduler.queueLength();
    }

    /**
     * Returns how many acquisitions of {@code key} wait.
     *
     * @param key the key
     * @return a snapshot
     * @throws NullPointerException if {@code key} is null
     */
    public int queueLength(K key) {
        Objects.requireNonNull(key, "queueLength(null): the key is null");
        return scheduler.queueLength(key);
    }

    /**
     * Returns the most permits one key may hold at once ({@link Builder#maxPermitsPerKey(long)}).
     *
     * @return the cap, {@code Long.MAX_VALUE} if none was set
     */
    public long maxPermitsPerKey() {
        return maxPermitsPerKey;
    }

    /**
     * Returns the number of keys that hold or wait (each costs one small object until it holds
     * and waits for nothing).
     *
     * @return a snapshot
     */
    public int activeKeys() {
        return scheduler.activeKeys();
    }

    /**
     * Returns whether {@link #close()} was called.
     *
     * @return {@code true} once closed
     */
    @Override
    public boolean isClosed() {
        return scheduler.closed;
    }

    /**
     * Returns the name given to the builder.
     *
     * @return the name, or {@code null} if unnamed
     */
    @Override
    public @Nullable String name() {
        return name;
    }

    /**
     * Returns a description for logs.
     *
     * @return for example {@code "FairShareSemaphore[capacity=16, available=0, queued=7, keys=3, closed=false]"}
     */
    @Override
    public String toString() {
        return "FairShareSemaphore[" + (name == null ? "" : "name=" + name + ", ") + "capacity=" + capacity()
                + ", available=" + availablePermits() + ", queued=" + queueLength() + ", keys=" + activeKeys()
                + ", closed=" + scheduler.closed + "]";
    }

    // ------------------------------------------------------------------ faces

    /**
     * Takes {@code n} permits for {@code key} if that can be done at once: not closed, no request
     * waits that could be served (of any key), {@code key} has no waiting request, its cap allows
     * it, and {@code n} permits are free. Never waits, never queues.
     *
     * <pre>{@code
     * if (pool.tryAcquire(tenant, 1)) {
     *     try { serve(request); } finally { pool.release(tenant, 1); }
     * } else {
     *     reject(request, "busy");
     * }
     * }</pre>
     *
     * @param key the key
     * @param n the number of permits; {@code 0} succeeds unless closed
     * @return {@code true} if the permits are now held by {@code key}
     * @throws IllegalArgumentException if {@code n < 0}, or the key's share is out of range
     * @throws NullPointerException if {@code key} is null
     */
    public boolean tryAcquire(K key, long n) {
        String call = "tryAcquire";
        FairShareChecks.countAndKey(call, key, n);
        if (scheduler.closed) {
            return false;
        }
        if (n == 0) {
            return true;
        }
        if (n > maxPermitsPerKey || n > core.capacity) {
            return false;
        }
        return scheduler.grantAtOnce(key, n, call) != null;
    }

    /**
     * The callback face: waits for {@code n} permits for {@code key} and settles through
     * {@code waker} exactly once, as {@link Semaphore#acquireThen(long, Waker)} does (on a grant
     * {@code claim()} then {@code wake()}, on close {@code wake()}); granted at once if
     * {@link #tryAcquire(Object, long)} would grant. Withdraw the wait with
     * {@link Acquisition#cancel()}: the permits handed to it go on to the next in order. The
     * waker's {@code claim()} runs after the fair share's internal lock, on the thread that made
     * the grant, as on a {@code Semaphore}; until it answers, the permits count as held by nobody,
     * and the fair share's observers and a {@code tryAcquire} that finds too few permits wait for
     * the answer (at most tens of milliseconds), so none sees a grant that the claim then declines.
     *
     * <pre>{@code
     * Acquisition a = pool.acquireThen(tenant, 2, () -> loop.execute(() -> run(tenant)));
     * }</pre>
     *
     * @param key the key
     * @param n the number of permits
     * @param waker what to run when the wait is over
     * @return the handle of this acquisition
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} or {@code waker} is null
     * @throws SemaphoreRejectedException if it would have to wait and a queue bound is reached
     */
    public Acquisition acquireThen(K key, long n, Waker waker) {
        String call = "acquireThen";
        check(call, key, n, waker, "waker"); // null arguments before the capacity, as on Semaphore
        return scheduler.enqueue(key, n, waker, false, call);
    }

    /** {@link dev.handoff.spi.Adapters#startAcquisition(FairShareSemaphore, Object, long, Acquisition)}. */
    <A extends Acquisition> A startAcquisition(K key, long n, A acquisition) {
        if (acquisition == null) {
            throw new NullPointerException("startAcquisition(" + key + ", " + n + ", null): the acquisition is null");
        }
        String named = acquisition.callName(); // an adapter's messages name the call its caller made
        String call = named != null ? named : "startAcquisition";
        check(call, key, n); // n < 0 first, then the key, the capacity and the cap
        scheduler.start(key, n, acquisition, call);
        return acquisition;
    }

    /**
     * The future face: completes with the {@link Permits} handle (its {@code release()} gives them
     * back to {@code key}) when granted; fails with {@link SemaphoreClosedException} on close, or
     * with {@link SemaphoreRejectedException} if a queue bound is reached. {@code cancel} withdraws
     * the wait; a cancelled future never holds permits.
     *
     * <pre>{@code
     * pool.acquireAsync(tenant, 1)
     *     .thenCompose(permits -> client.call(request).whenComplete((r, e) -> permits.release()));
     * }</pre>
     *
     * @param key the key
     * @param n the number of permits
     * @return the future of the grant
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} is null
     */
    public CompletableFuture<Permits> acquireAsync(K key, long n) {
        String call = "acquireAsync";
        check(call, key, n);
        KeyState<K> k = tryAtOnce(key, n, call);
        if (k != null) {
            if (leaks == null) {
                return new PermitHandles.Granted(n, k);
            }
            PermitLeaks.Tracked t = PermitLeaks.track(leaks, k, this, call + "(" + key + ", " + n + ")");
            CompletableFuture<Permits> granted = new PermitHandles.Granted(n, t);
            return t.watch(granted);
        }
        FairShareFuture f = new FairShareFuture(call + "(" + key + ", " + n + ")");
        try {
            scheduler.enqueue(key, n, f, true, call); // stores the ticket in f
        } catch (SemaphoreRejectedException shed) {
            return CompletableFuture.failedFuture(shed);
        }
        if (leaks != null) {
            FairShareTicket<?> ticket = f.ticket;
            PermitLeaks.Tracked t =
                    ticket == null ? null : ticket.track(leaks, this, call + "(" + key + ", " + n + ")");
            if (t != null) {
                t.watch(f); // f is the caller's only way to the ticket, and it has not returned yet
            }
        }
        return f;
    }

    /**
     * Runs {@code body} holding {@code n} permits of {@code key} and releases them to {@code key}
     * when the stage it returns completes, however it completes: the asynchronous
     * {@code try/finally}, with the rules of {@link Semaphore#withPermitsAsync(long, java.util.function.Supplier)}.
     * The permits are acquired as by {@link #acquireAsync(Object, long)}; {@code body} runs once
     * they are granted (on the granting thread). They are released exactly once if, and only if,
     * they were granted: when the stage completes normally or exceptionally, or when {@code body}
     * throws or returns {@code null}. If the acquisition fails (closed, a queue bound), the result
     * fails with the same exception and nothing is released. Cancelling the result (or failing it,
     * as {@code orTimeout} does) before the grant withdraws the wait; a grant that wins that race is
     * released without running {@code body}.
     *
     * <pre>{@code
     * CompletableFuture<Rows> rows = pool.withPermitsAsync(tenant, 1, () -> db.queryAsync(sql));
     * }</pre>
     *
     * @param key the key
     * @param n the number of permits
     * @param body the work to run holding them; returns the stage whose completion releases them
     * @param <T> the result type
     * @return a future completed with the stage's result, or failed with its, {@code body}'s or the
     *     acquisition's exception
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} or {@code body} is null
     */
    public <T extends @Nullable Object> CompletableFuture<T> withPermitsAsync(
            K key, long n, java.util.function.Supplier<? extends java.util.concurrent.CompletionStage<T>> body) {
        String call = "withPermitsAsync";
        check(call, key, n, body, "body"); // null arguments before the capacity, as on Semaphore
        return ScopedAsync.run(acquireAsync(key, n), () -> release(key, n), body, call + "(" + key + ", " + n + ")");
    }

    /**
     * Runs {@code body} holding {@code n} permits of {@code key} and releases them to {@code key}
     * when it returns or throws: the blocking {@code try/finally}. The permits are acquired as by
     * {@link #acquireBlocking(Object, long)} (parking this thread, safe on virtual threads); if the
     * wait fails (interrupt, close, a queue bound), {@code body} does not run and nothing is held.
     *
     * <pre>{@code
     * Rows rows = pool.withPermitsBlocking(tenant, 1, () -> db.query(sql));
     * }</pre>
     *
     * @param key the key
     * @param n the number of permits
     * @param body the work to run holding them
     * @param <T> the result type
     * @return what {@code body} returned
     * @throws Exception what {@code body} threw, after the permits were released
     * @throws InterruptedException if interrupted before the grant (nothing held, {@code body} not run)
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} or {@code body} is null
     * @throws SemaphoreClosedException if closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and a queue bound is reached
     */
    public <T extends @Nullable Object> T withPermitsBlocking(K key, long n, java.util.concurrent.Callable<T> body)
            throws InterruptedException, Exception {
        String call = "withPermitsBlocking";
        check(call, key, n, body, "body"); // null arguments before the capacity, as on Semaphore
        acquireBlocking(key, n);
        try {
            return body.call();
        } finally {
            release(key, n);
        }
    }

    /**
     * The blocking face: parks until {@code n} permits are granted to {@code key} and returns their
     * handle (use it in try-with-resources). Virtual-thread safe. On interrupt the wait is
     * withdrawn, nothing is held and {@link InterruptedException} is thrown (if the grant won the
     * race, it returns normally with the interrupt flag set).
     *
     * <pre>{@code
     * try (Permits p = pool.acquireBlocking(tenant, 1)) {
     *     serve(request);
     * }
     * }</pre>
     *
     * @param key the key
     * @param n the number of permits
     * @return the handle of the permits
     * @throws InterruptedException if interrupted while waiting (nothing held)
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} is null
     * @throws SemaphoreClosedException if closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and a queue bound is reached
     */
    public Permits acquireBlocking(K key, long n) throws InterruptedException {
        String call = "acquireBlocking";
        check(call, key, n);
        FairShareChecks.notInterrupted(call, key, n);
        KeyState<K> k = tryAtOnce(key, n, call);
        if (k != null) {
            if (leaks == null) {
                return new PermitHandles.Held(n, k);
            }
            PermitLeaks.Tracked t = PermitLeaks.track(leaks, k, this, call + "(" + key + ", " + n + ")");
            return t.watch(new PermitHandles.Held(n, t));
        }
        FairShareTicket<K> t = scheduler.enqueue(key, n, Thread.currentThread(), true, call);
        core.await(t, false, 0L, call + "(" + key + ", " + n + ")");
        if (leaks != null) {
            PermitLeaks.Tracked tracked = t.track(leaks, this, call + "(" + key + ", " + n + ")");
            if (tracked != null) {
                return tracked.watch(t); // granted, and the caller has not got it yet
            }
        }
        return t;
    }

    /**
     * The timed blocking face: as {@link #acquireBlocking(Object, long)}, giving up after
     * {@code timeout} (then {@code false}, nothing held). Release with {@link #release(Object, long)}.
     *
     * <pre>{@code
     * if (pool.tryAcquireBlocking(tenant, 1, Duration.ofMillis(50))) {
     *     try { serve(request); } finally { pool.release(tenant, 1); }
     * }
     * }</pre>
     *
     * @param key the key
     * @param n the number of permits
     * @param timeout how long to wait at most; zero or negative: do not wait
     * @return {@code true} if the permits are held by {@code key}
     * @throws InterruptedException if interrupted while waiting (nothing held)
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} or {@code timeout} is null
     * @throws SemaphoreClosedException if closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and a queue bound is reached
     */
    public boolean tryAcquireBlocking(K key, long n, Duration timeout) throws InterruptedException {
        String call = "tryAcquireBlocking";
        check(call, key, n, timeout, "timeout"); // null arguments before the capacity, as on Semaphore
        FairShareChecks.notInterrupted(call, key, n);
        if (tryAtOnce(key, n, call) != null) {
            return true;
        }
        long nanos = Semaphore.saturatedNanos(timeout);
        if (nanos <= 0) {
            if (scheduler.closed) {
                throw CoreMessages.closedException(call + "(" + key + ", " + n + ")");
            }
            return false;
        }
        FairShareTicket<K> t = scheduler.enqueue(key, n, Thread.currentThread(), false, call);
        return core.await(t, true, nanos, call + "(" + key + ", " + n + ")");
    }

    /**
     * Gives {@code n} permits of {@code key} back. They go to the request first in fair order
     * (partially, if it needs more), then to the next ones that fit; only the surplus becomes free.
     * Works on a closed semaphore too.
     *
     * <pre>{@code
     * pool.release(tenant, 2);
     * }</pre>
     *
     * @param key the key that holds them
     * @param n the number of permits; {@code 0} does nothing
     * @throws IllegalArgumentException if {@code n < 0}
     * @throws NullPointerException if {@code key} is null
     * @throws IllegalStateException if {@code key} holds fewer than {@code n} permits; nothing changes
     */
    public void release(K key, long n) {
        releaseOn(key, n, null);
    }

    /**
     * Gives {@code n} permits of {@code key} back like {@link #release(Object, long)}, but the
     * wakers of the acquisitions it completes run on {@code wakeExecutor}, not on this thread, as
     * with {@link Semaphore#release(long, Executor)}: the permits are handed out in fair order
     * before this method returns (the wakers' {@link Waker#claim()} runs here); only the
     * {@code wake()} calls move, in one task. If the executor refuses the task, the wakers run
     * here, so none is lost. Threads parked in {@link #acquireBlocking(Object, long)} are unparked
     * at once, never through the executor; if nobody else is woken, the executor is not used.
     *
     * <pre>{@code
     * // on the I/O thread: give the tenant's permits back, but let the pool run whoever they complete
     * pool.release(tenant, 2, workers);
     * }</pre>
     *
     * @param key the key that holds them
     * @param n the number of permits; {@code 0} does nothing
     * @param wakeExecutor where the wake-ups caused by this release run
     * @throws IllegalArgumentException if {@code n < 0}
     * @throws NullPointerException if {@code key} or {@code wakeExecutor} is null
     * @throws IllegalStateException if {@code key} holds fewer than {@code n} permits; nothing changes
     */
    public void release(K key, long n, Executor wakeExecutor) {
        if (wakeExecutor == null) {
            throw new NullPointerException("release(" + key + ", " + n + ", null): the executor is null");
        }
        releaseOn(key, n, wakeExecutor);
    }

    /** {@link #release(Object, long, Executor)}, or with the wake-ups on this thread if {@code wakes} is null. */
    private void releaseOn(K key, long n, @Nullable Executor wakes) {
        String call = "release";
        FairShareChecks.countAndKey(call, key, n);
        if (n == 0) {
            return;
        }
        scheduler.release(key, n, wakes, call);
    }

    /**
     * Changes the total capacity to {@code n}, as {@link Semaphore#setCapacity(long)}: growing hands
     * the new permits out in fair order; shrinking takes free permits and owes the rest (held permits
     * are never revoked); waiting requests heavier than {@code n} fail at once with
     * {@link IllegalStateException}.
     *
     * @param n the new capacity
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > Semaphore.MAX_PERMITS}
     */
    public void setCapacity(long n) {
        if (n < 0 || n > FifoCore.MAX_PERMITS) {
            throw new IllegalArgumentException("setCapacity(" + n
                    + "): the capacity must be between 0 and MAX_PERMITS (" + FifoCore.MAX_PERMITS + ")");
        }
        scheduler.resize(false, n, "setCapacity(" + n + ")");
    }

    /**
     * Adds {@code delta} to the total capacity atomically ({@code delta < 0} shrinks, with debt), as
     * {@link #setCapacity(long)} to {@code capacity() + delta}.
     *
     * <pre>{@code
     * pool.addCapacity(+8); // a new replica joined
     * }</pre>
     *
     * @param delta the change
     * @return the new capacity
     * @throws IllegalArgumentException if the result would be below 0 or above {@code Semaphore.MAX_PERMITS}
     */
    public long addCapacity(long delta) {
        return scheduler.resize(true, delta, "addCapacity(" + delta + ")");
    }

    /**
     * Closes the semaphore. Idempotent. Every waiting acquisition fails as on
     * {@link Semaphore#close()}; later acquisitions fail the same way, {@link #tryAcquire(Object, long)}
     * returns {@code false}; {@link #release(Object, long)} keeps working.
     */
    public void close() {
        scheduler.close();
    }

    /**
     * Closes the semaphore (see {@link #close()}) and returns a future completed once every held
     * permit of every key has been released (and any debt of a shrink paid).
     *
     * <pre>{@code
     * pool.closeAsync().get(30, TimeUnit.SECONDS);
     * }</pre>
     *
     * @return a future completed when the semaphore is drained
     */
    public CompletableFuture<Void> closeAsync() {
        close();
        return core.closeAsync();
    }

    // ------------------------------------------------------------------ internals

    /** The arguments of a face that waits (see {@link FairShareChecks#request}). */
    private void check(String call, K key, long n) {
        FairShareChecks.request(call, key, n, core, maxPermitsPerKey);
    }

    /** As {@link #check(String, Object, long)}, the face's last argument, named {@code what}, not null. */
    private void check(String call, K key, long n, @Nullable Object last, String what) {
        FairShareChecks.request(call, key, n, last, what, core, maxPermitsPerKey);
    }

    /** The immediate grant of the future and blocking faces: the key's state if granted, else null. */
    private @Nullable KeyState<K> tryAtOnce(K key, long n, String call) {
        return scheduler.closed ? null : scheduler.grantAtOnce(key, n, call);
    }

    /** For tests: the stamp of the scheduler's lock (one more at every lock and unlock). */
    int sectionStamp() {
        return scheduler.sectionStamp();
    }

    /** For tests: whether the fair share is in solo mode. */
    boolean inSoloMode() {
        return solo.isOn();
    }
}
