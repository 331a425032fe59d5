// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A weighted, strictly FIFO, starvation-free semaphore: bound concurrency by cost (bytes in
 * flight, rows per batch, tokens per request), not by count.
 *
 * <p>A semaphore has a capacity of {@code N} permits (changeable with {@link #setCapacity(long)}). Callers take {@code n} permits at a
 * time and give them back with {@link #release(long)}, or through the {@link Permits} handle that
 * the blocking and asynchronous faces return. Every way of waiting is offered on the same queue,
 * and the suffix of a method names how it waits: none never waits ({@link #tryAcquire(long)}),
 * {@code Then} calls back ({@link #acquireThen(long, Waker)}), {@code Async} returns a
 * {@link CompletableFuture} ({@link #acquireAsync(long)}), {@code Blocking} parks the thread, safely
 * on virtual threads ({@link #acquireBlocking(long)}, {@link #tryAcquireBlocking(long, Duration)});
 * in the Kotlin module {@code dev.handoff.coroutines}, no suffix means {@code suspend}.
 *
 * <pre>{@code
 * Semaphore inFlight = new Semaphore(64L << 20);          // at most 64 MiB in flight
 *
 * void upload(byte[] body) throws InterruptedException {
 *     try (Permits p = inFlight.acquireBlocking(body.length)) {
 *         client.send(body);
 *     }                                                   // released here, however send ends
 * }
 * }</pre>
 *
 * <h2>Fairness</h2>
 * Strictly FIFO by the moment a call joins the queue. Head-of-line blocking is intended: a heavy
 * acquisition at the head blocks lighter ones behind it even if they would fit, so heavy
 * acquisitions are never starved by a stream of light ones. There is no barging: while anyone
 * waits, {@link #tryAcquire(long)} fails even if enough permits are free. Released permits go
 * directly to the head of the queue (partially, if it needs more), then to the next heads that
 * fit, in order; only the surplus becomes free. Permits handed to a waiting head are not free,
 * so {@link #availablePermits()} is {@code 0} whenever anyone waits.
 *
 * <h2>Cancellation</h2>
 * Every wait can be withdrawn ({@link Acquisition#cancel()}, {@code future.cancel}, interrupt,
 * timeout, coroutine cancellation). A withdrawn wait holds nothing: the permits it was partially
 * handed go on to the waiters behind it. A race between a grant and a cancellation has exactly one
 * winner; no interleaving loses or creates a permit.
 *
 * <h2>Closing</h2>
 * {@link #close()} fails every waiting and every later acquisition with
 * {@link SemaphoreClosedException}; {@code release} keeps working, so holders can still return
 * what they hold.
 *
 * <h2>Memory consistency effects</h2>
 * Actions in a thread before a {@code release} happen-before actions following the completion of
 * every acquisition that release grants, and of a {@code tryAcquire} that takes those permits.
 *
 * <h2>Cost</h2>
 * {@code tryAcquire}, and {@code release} while nobody waits, are one compare-and-set, no lock and
 * no allocation. A wait allocates one queue node (the {@link Acquisition}).
 */
public final class Semaphore extends SemaphoreBase {

    /**
     * The largest capacity a semaphore can have: 2<sup>56</sup> (72,057,594,037,927,936), enough to
     * count the bytes of 64 PiB. A capacity, a resize or an acquisition beyond it is refused with
     * {@link IllegalArgumentException}.
     */
    public static final long MAX_PERMITS = FifoCore.MAX_PERMITS;

    /**
     * Creates a semaphore with {@code permits} permits, all free.
     *
     * @param permits the capacity {@code N}, from {@code 0} to {@link #MAX_PERMITS}
     * @throws IllegalArgumentException if {@code permits < 0} or {@code permits > MAX_PERMITS}
     */
    public Semaphore(long permits) {
        super(checkCapacity("new Semaphore", permits), Long.MAX_VALUE, Integer.MAX_VALUE, null, null, null);
    }

    private Semaphore(Builder b) {
        super(b.capacity, b.maxQueuedPermits, b.maxQueueLength, b.listener, b.name, b.leakDetection);
        if (b.listener != null && b.name != null) {
            b.listener.attached(b.name);
        }
    }

    /**
     * Starts building a semaphore with {@code capacity} permits and options: a bound on the wait
     * queue for load shedding. Without options it is {@code new Semaphore(capacity)}.
     *
     * <pre>{@code
     * Semaphore tokens = Semaphore.builder(100_000)   // at most 100,000 tokens of requests in flight
     *         .name("model")
     *         .maxQueuedPermits(400_000)              // beyond 400,000 tokens waiting, shed the rest
     *         .build();
     * try (Permits held = tokens.acquireBlocking(request.tokens())) {
     *     return model.complete(request);             // released here, however it ends
     * } catch (SemaphoreRejectedException busy) {
     *     return Response.status(503);                // nothing queued, nothing held
     * }
     * }</pre>
     *
     * <p>A semaphore bounds what is in flight at once, not how often: for so many per second, use a
     * rate limiter.
     *
     * @param capacity the capacity {@code N}, from {@code 0} to {@link #MAX_PERMITS}
     * @return a builder
     * @throws IllegalArgumentException if {@code capacity < 0} or {@code capacity > MAX_PERMITS}
     */
    public static Builder builder(long capacity) {
        checkCapacity("builder", capacity);
        return new Builder(capacity);
    }

    /**
     * Options of a {@link Semaphore}: see {@link Semaphore#builder(long)}. Not thread-safe; each
     * {@link #build()} makes a new semaphore.
     */
    public static final class Builder extends TrackedBuilder<Builder, Semaphore> {
        private final long capacity;
        private long maxQueuedPermits = Long.MAX_VALUE;

        private Builder(long capacity) {
            this.capacity = capacity;
        }

        /**
         * Bounds the total weight that may wait: an acquisition that would have to queue while
         * {@code queuedPermits() + n > q} is rejected at once with
         * {@link SemaphoreRejectedException} (a failed future for the asynchronous faces), nothing
         * queued, nothing held. An acquisition that can be granted at once is never rejected.
         * {@code 0} means "never queue". Unbounded by default.
         *
         * @param q the most permits that may wait in total, {@code >= 0}
         * @return this builder
         * @throws IllegalArgumentException if {@code q < 0}
         */
        public Builder maxQueuedPermits(long q) {
            if (q < 0) {
                throw new IllegalArgumentException("maxQueuedPermits(" + q + "): must not be negative");
            }
            this.maxQueuedPermits = q;
            return this;
        }

        /**
         * Builds the semaphore, all permits free.
         *
         * @return a new semaphore with these options
         */
        @Override
        public Semaphore build() {
            return new Semaphore(this);
        }
    }

    /** The core, for the other faces in this package. */
    FifoCore core() {
        return core;
    }

    @Override
    public @Nullable String name() {
        return name;
    }

    /**
     * Returns the capacity {@code N}: given at construction, changed by {@link #setCapacity(long)}.
     *
     * @return the capacity
     */
    public long capacity() {
        return core.capacity;
    }

    /**
     * Returns the sum of the weights of the waiting acquisitions (for an up-to request, its
     * minimum). A snapshot, exact at some moment during the call; {@code 0} while nobody waits;
     * {@link Long#MAX_VALUE} if the sum does not fit in a {@code long}. Constant time, whatever the
     * queue length, and never takes or queues for the internal lock: it reads counters the queue
     * keeps. If a grant or a cancellation stays in progress meanwhile (its thread descheduled, or a
     * slow claim of an adapter's node; a {@link Waker#claim()} never holds it up), it waits for it at most about a scheduler time slice and then
     * answers with what it read during it: at least {@code 0}, and recent rather than exact.
     *
     * @return the permits waited for
     */
    @Override
    public long queuedPermits() {
        return core.queuedPermits();
    }

    /**
     * Changes the capacity to {@code n} at run time; never blocks, never revokes.
     *
     * <p>Growing by {@code d} hands the {@code d} new permits to the queue exactly as
     * {@code release(d)} would (partial assignment included). Shrinking by {@code d} takes what it
     * can from the free permits and records the rest as <em>debt</em>: while debt is owed,
     * {@link #availablePermits()} is {@code 0} and every released permit pays the debt first,
     * before any waiter or the free count is served; held permits are never revoked. Waiting
     * acquisitions that can no longer ever fit (weight above {@code n}) fail at once: a blocking
     * call or a coroutine throws, a future fails, a callback {@link Acquisition} is woken with
     * {@link Acquisition#failure()} an {@link IllegalStateException} naming the weight and the new
     * capacity (not granted, not closed); their partial permits go on, and the requests behind
     * them may then be served. Over-release is still detected exactly: the permits held are
     * {@code capacity + debt - free - permits handed to the waiting head}. Works on a closed
     * semaphore too. An adaptive limiter calls this all the time:
     *
     * <pre>{@code
     * if (latencyMillis > targetMillis) limit.setCapacity(Math.max(1, limit.capacity() / 2));
     * else limit.setCapacity(limit.capacity() + 1);
     * }</pre>
     *
     * @param n the new capacity, from {@code 0} to {@link #MAX_PERMITS}
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > MAX_PERMITS}
     */
    public void setCapacity(long n) {
        if (n < 0 || n > MAX_PERMITS) {
            throw new IllegalArgumentException(
                    "setCapacity(" + n + "): the capacity must be between 0 and MAX_PERMITS (" + MAX_PERMITS + ")");
        }
        core.setCapacity(n);
    }

    /**
     * Changes the capacity by {@code delta}, atomically: two threads that each add one end one
     * higher each, unlike {@code setCapacity(capacity() + 1)}, which can lose an update. A positive
     * {@code delta} hands the new permits to the queue as {@code release(delta)} would; a negative
     * one shrinks with debt. Same rules, errors and failures of waiters that can no longer fit as
     * {@link #setCapacity(long)}.
     *
     * <pre>{@code
     * pool.addCapacity(+1);                       // one more connection was opened
     * pool.addCapacity(-1);                       // one was closed: taken from the free permits, or owed
     * }</pre>
     *
     * @param delta how much to add; negative shrinks
     * @return the new capacity
     * @throws IllegalArgumentException if the new capacity would be below {@code 0} or above
     *     {@link #MAX_PERMITS} (nothing changes)
     */
    public long addCapacity(long delta) {
        return core.addCapacity(delta);
    }

    /**
     * Takes {@code n} permits, giving up after {@code timeout}, without blocking a thread: the
     * future completes with {@code true} once granted (the caller must release), with
     * {@code false} if the timeout came first (nothing held; permits partially handed to the
     * wait went on to the waiters behind it), and fails with {@link SemaphoreClosedException} on
     * close ({@link SemaphoreRejectedException} if shed). Whichever of timer and grant wins, the
     * answer is exact. The timer is dropped as soon as the wait settles, so a million requests
     * granted in time leave no timer task behind. Cancelling the future withdraws the wait; if the
     * grant won that race, {@code cancel} returns {@code false} and the future completes with
     * {@code true}.
     *
     * <pre>{@code
     * budget.tryAcquireAsync(bytes, Duration.ofMillis(200)).thenAccept(granted -> {
     *     if (!granted) { reply(429); return; }
     *     send(body).whenComplete((r, e) -> budget.release(bytes));
     * });
     * }</pre>
     *
     * @param n the number of permits
     * @param timeout the longest wait; zero or negative does not wait
     * @return a future of whether the permits were granted
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     * @throws NullPointerException if {@code timeout} is null
     */
    public CompletableFuture<Boolean> tryAcquireAsync(long n, Duration timeout) {
        if (n < 0) {
            throw negative("tryAcquireAsync", n);
        }
        if (timeout == null) {
            throw new NullPointerException("tryAcquireAsync(" + n + ", null): the timeout is null");
        }
        checkFits("tryAcquireAsync", n);
        return core.tryAcquireAsync(n, saturatedNanos(timeout), "tryAcquireAsync(" + n + ", " + timeout + ")", null);
    }

    /**
     * Closes the semaphore (see {@link #close()}) and returns a future that completes when every
     * held permit has been released and any debt paid: a graceful drain before exit. It completes
     * exactly when the last held permit comes back, even if that release runs on another thread at
     * the same instant as the close; at once if nothing is held. Each call returns its own future
     * (cancelling it does not affect the drain).
     *
     * <pre>{@code
     * limiter.closeAsync().get(30, TimeUnit.SECONDS);   // refuse new work, let running work finish
     * }</pre>
     *
     * @return a future completed when nothing is held any more
     */
    public CompletableFuture<Void> closeAsync() {
        return core.closeAsync();
    }

    /**
     * Returns the number of free permits: held by no caller and not handed to a waiting
     * acquisition. It is {@code 0} whenever anyone waits. {@link #close()} does not change it.
     * A snapshot, for monitoring.
     *
     * @return the free permits
     */
    public long availablePermits() {
        return core.availablePermits();
    }

    /**
     * Returns the number of waiting acquisitions. A snapshot, exact at some moment during the
     * call, for monitoring. Constant time, and never takes or queues for the internal lock (see
     * {@link #queuedPermits()}, also for how long it may wait for a grant in progress).
     *
     * @return the queue length
     */
    @Override
    public int queueLength() {
        return core.queueLength();
    }

    /**
     * Returns whether {@link #close()} was called.
     *
     * @return {@code true} once closed
     */
    @Override
    public boolean isClosed() {
        return core.isClosed();
    }

    /**
     * Takes {@code n} permits if that can be done at once, without waiting and without queueing.
     * Succeeds iff nobody waits, the semaphore is not closed and at least {@code n} permits are
     * free: while anyone waits it fails even if enough permits are free (no barging). One
     * compare-and-set, no lock, no allocation.
     *
     * <p>Checks, in this order: {@code n < 0} throws; closed returns {@code false};
     * {@code n == 0} returns {@code true}; {@code n > capacity()} returns {@code false}.
     *
     * <pre>{@code
     * if (!limiter.tryAcquire(cost)) return Response.tooManyRequests();
     * try { return handle(request); } finally { limiter.release(cost); }
     * }</pre>
     *
     * @param n the number of permits
     * @return {@code true} if the permits were taken and must be released
     * @throws IllegalArgumentException if {@code n < 0}
     */
    public boolean tryAcquire(long n) {
        if (n <= 0) {
            return tryAcquireZero(n);
        }
        return core.tryAcquire(n);
    }

    private boolean tryAcquireZero(long n) {
        if (n < 0) {
            throw negative("tryAcquire", n);
        }
        return !core.isClosed();
    }

    /**
     * The callback primitive: takes {@code n} permits, now or when the queue reaches this call.
     * Grants at once if {@link #tryAcquire(long) tryAcquire(n)} would; otherwise joins the tail of
     * the queue.
     *
     * <p><b>Every acquisition settles through its waker, exactly once</b>: on a grant
     * {@link Waker#claim()} then {@link Waker#wake()}, on close {@code wake()} alone — whether that
     * happens before this method returns (then on the calling thread, after every internal lock is
     * released) or later (on the thread that releases, cancels or closes). So the caller never needs
     * a special case for "granted at once"; a caller who wants the allocation-free fast path calls
     * {@code tryAcquire(n)} first. Withdraw the wait with {@link Acquisition#cancel()}.
     *
     * <p>The waker learns the outcome from the {@link Acquisition}: {@code isGranted()}, or
     * {@code isClosed()} (or, for a waker whose {@code claim()} threw, {@code failure()}). A waker
     * also runs when nothing was granted, so release only after {@code isGranted()}, and then on
     * every path. Since {@code wake()} may run before {@code acquire} returns, read the handle from
     * where {@code wake()} hands off to, as in this event-loop integration (the task queued by
     * {@code wake()} runs after {@code start()} has stored the handle):
     * <pre>{@code
     * final class Send implements Waker {                  // created and started on the loop
     *     private Acquisition acquisition;
     *     void start() { acquisition = budget.acquireThen(request.bytes(), this); }
     *     public void wake() { loop.execute(this::run); }
     *     private void run() {
     *         if (!acquisition.isGranted()) {              // closed: nothing held, nothing to release
     *             request.fail("shutting down");
     *             return;
     *         }
     *         try {
     *             send(request);
     *         } finally {
     *             budget.release(request.bytes());         // granted: released once, however send ends
     *         }
     *     }
     * }
     * }</pre>
     *
     * <p>Checks, in this order: {@code n < 0} throws; a null waker throws;
     * {@code n > capacity()} throws at once, since it could never be granted (the waker is not
     * called); closed returns a {@linkplain Acquisition#isClosed() closed} acquisition (its waker
     * has run); {@code n == 0} is granted at once.
     *
     * @param n the number of permits
     * @param waker what to run when the wait is over
     * @return the handle of this acquisition
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     * @throws NullPointerException if {@code waker} is null
     */
    public Acquisition acquireThen(long n, Waker waker) {
        if (n < 0) {
            throw negative("acquireThen", n);
        }
        if (waker == null) {
            throw new NullPointerException("acquireThen(" + n + ", null): the waker is null");
        }
        checkFits("acquireThen", n);
        return core.acquire(n, waker, null, "acquireThen(" + n + ", waker)");
    }

    /** {@link dev.handoff.spi.Adapters#startAcquisition(Semaphore, long, Acquisition)}. */
    <A extends Acquisition> A startAcquisition(long n, A acquisition) {
        if (n < 0) {
            throw negative("startAcquisition", n);
        }
        if (acquisition == null) {
            throw new NullPointerException("startAcquisition(" + n + ", null): the acquisition is null");
        }
        checkFits(acquisition, "startAcquisition", n);
        return core.start(acquisition, n, null, "startAcquisition");
    }

    /** {@link dev.handoff.spi.Adapters#startAcquisitionUpTo(Semaphore, long, long, Acquisition)}. */
    <A extends Acquisition> A startAcquisitionUpTo(long min, long max, A acquisition) {
        checkRange(acquisition, "startAcquisitionUpTo", min, max);
        if (acquisition == null) {
            throw new NullPointerException(
                    "startAcquisitionUpTo(" + min + ", " + max + ", null): the acquisition is null");
        }
        // Equal bounds make an exact node, whose messages would read "startAcquisitionUpTo(n)": name
        // both bounds, as the caller wrote them (a string built only for this rare form).
        return core.start(
                acquisition,
                min,
                max,
                null,
                min == max ? "startAcquisitionUpTo(" + min + ", " + max + ")" : "startAcquisitionUpTo");
    }

    /**
     * Takes {@code n} permits, returning a future that completes when they are granted, or fails
     * with {@link SemaphoreClosedException} if the semaphore is or gets closed first. Same FIFO
     * queue and checks as {@link #acquireThen(long, Waker)}; argument errors are thrown by this call,
     * not put in the future. The future completes on the thread that grants (often the one calling
     * {@code release}); use the {@code *Async} methods of the future to move work elsewhere.
     *
     * <p><b>A cancelled future never holds permits.</b> {@code future.cancel(..)} withdraws the
     * wait and returns {@code true}; if the grant won the race, it returns {@code false} and the
     * future completes normally, holding the permits. Failing the future yourself
     * ({@code completeExceptionally}, and so {@code orTimeout}) withdraws the wait the same way.
     * A normal completion always means a grant, so {@code complete} (and so
     * {@code completeOnTimeout}), {@code obtrude*} and {@code completeAsync} are not supported on
     * this future. The future's dependents run on the thread that completes it; a cancel may
     * complete the waiters behind it, so their dependents can run on the cancelling thread: keep
     * them short or use the {@code *Async} stages. A timeout ({@code orTimeout}) never runs them
     * on the JDK's shared timer thread: the waiters it completes are woken on
     * {@link CompletableFuture#defaultExecutor()}.
     *
     * <p>Release exactly when the grant happened: chain the release on the work that runs
     * <em>after</em> the grant, never on the acquisition's own outcome (a failed acquisition holds
     * nothing; releasing for it would give back another holder's permits), and cover the work
     * throwing instead of failing its stage. Time out or cancel this future, not a later stage of
     * the chain: a stage cancelled (or failed by {@code orTimeout}) before the grant is skipped
     * when the grant comes, and the release with it. To hand the outcome to code that may cancel
     * it, use {@link #withPermitsAsync(long, Supplier)}, which does all of this and withdraws the
     * wait when its result is cancelled.
     * <pre>{@code
     * budget.acquireAsync(item.size())
     *       .orTimeout(30, TimeUnit.SECONDS)                   // fails the wait: nothing held
     *       .thenCompose(permits -> {                          // runs only after a grant
     *           try {
     *               return download(item)
     *                       .whenComplete((body, error) -> permits.release());
     *           } catch (Throwable t) {                        // download threw: no stage to wait for
     *               permits.release();
     *               throw t;
     *           }
     *       });
     * }</pre>
     *
     * @param n the number of permits
     * @return a future completed with the handle of the permits when they are granted
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     */
    public CompletableFuture<Permits> acquireAsync(long n) {
        if (n < 0) {
            throw negative("acquireAsync", n);
        }
        checkFits("acquireAsync", n);
        return core.acquireAsync(n, "acquireAsync", byCount, leaks);
    }

    /**
     * Takes {@code n} permits, parking the calling thread until they are granted. Safe on virtual
     * threads: the wait parks with {@link java.util.concurrent.locks.LockSupport} and never holds a
     * monitor, so the carrier thread is not pinned.
     *
     * <p>On interrupt (also one pending on entry) the wait is withdrawn, nothing is held, and
     * {@link InterruptedException} is thrown; if the grant won the race, this method returns
     * normally with the thread's interrupt flag set.
     *
     * <pre>{@code
     * try (Permits p = inFlight.acquireBlocking(body.length)) {
     *     client.send(body);
     * }
     * }</pre>
     *
     * @param n the number of permits
     * @return the handle of the permits: {@link Permits#close()} (or {@code release(n)}) gives them back
     * @throws InterruptedException if interrupted before the grant
     * @throws SemaphoreClosedException if the semaphore is or gets closed before the grant
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     */
    public Permits acquireBlocking(long n) throws InterruptedException {
        if (n < 0) {
            throw negative("acquireBlocking", n);
        }
        checkFits("acquireBlocking", n);
        return core.acquireBlocking(n, "acquireBlocking", byCount, leaks);
    }

    /**
     * Takes {@code n} permits, parking the calling thread for at most {@code timeout}. As
     * {@link #acquireBlocking(long)}, but gives up after the timeout: then the wait is withdrawn,
     * nothing is held and the result is {@code false}. If the grant wins the race with the
     * timeout, the result is {@code true}. A zero or negative timeout does not wait (but, unlike
     * {@link #tryAcquire(long)}, throws if closed).
     *
     * <pre>{@code
     * if (!pool.tryAcquireBlocking(1, Duration.ofMillis(250))) throw new TimeoutException("no connection");
     * }</pre>
     *
     * @param n the number of permits
     * @param timeout the longest wait
     * @return {@code true} if the permits were taken and must be released
     * @throws InterruptedException if interrupted before the grant
     * @throws SemaphoreClosedException if the semaphore is or gets closed before the grant
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     * @throws NullPointerException if {@code timeout} is null
     */
    public boolean tryAcquireBlocking(long n, Duration timeout) throws InterruptedException {
        if (n < 0) {
            throw negative("tryAcquireBlocking", n);
        }
        if (timeout == null) {
            throw new NullPointerException("tryAcquireBlocking(" + n + ", null): the timeout is null");
        }
        checkFits("tryAcquireBlocking", n);
        return core.tryAcquire(n, saturatedNanos(timeout), "tryAcquireBlocking(" + n + ", " + timeout + ")", null);
    }

    /**
     * Returns {@code n} permits. They go directly to the head of the queue (partially, if it needs
     * more), then to the next heads that fit, in order; only the surplus becomes free. Wakers of the
     * acquisitions it completes run on this thread, after the internal lock is released, before
     * this method returns (when called from inside a deeply nested chain of wakers, they run
     * shortly after, from the outermost one; see {@link Waker}). Works on a closed semaphore too. One compare-and-set and no lock while
     * nobody waits.
     *
     * @param n the number of permits; {@code 0} does nothing
     * @throws IllegalArgumentException if {@code n < 0}
     * @throws IllegalStateException if {@code n} is more than the permits currently held by
     *     callers (capacity minus free minus those handed to a waiting head); nothing changes then
     */
    public void release(long n) {
        if (n <= 0) {
            if (n < 0) {
                throw negative("release", n);
            }
            return;
        }
        long held = core.release(n);
        if (held >= 0) {
            throw overRelease(n, held);
        }
    }

    /**
     * Returns {@code n} permits like {@link #release(long)}, but the wakers of the acquisitions it
     * completes run on {@code wakeExecutor}, not on this thread. The release itself is done before
     * this method returns, exactly as by {@code release(n)}: the permits are handed to the waiters
     * in order (their {@link Waker#claim()} runs here, after the internal lock is released), the surplus
     * becomes free and a {@link WaitListener} is told; only the {@code wake()} calls move, in one
     * task, in FIFO order. Use it when releasing from a thread that must not run other parties'
     * callbacks (a timer thread, an event loop, a cancellation handler). If the executor refuses the
     * task, the wakers run on this thread, so none is lost. The executor must run every task it
     * accepts: the waiters it holds are granted already. Threads parked in
     * {@link #acquireBlocking(long)} are unparked at once, never through the executor (no user
     * code runs there); if the release wakes nobody else, the executor is not used.
     *
     * <pre>{@code
     * // on the I/O thread: give the bytes back, but let the pool run whoever they complete
     * budget.release(bytes, workers);
     * }</pre>
     *
     * @param n the number of permits; {@code 0} does nothing
     * @param wakeExecutor where the wake-ups caused by this release run
     * @throws IllegalArgumentException if {@code n < 0} (nothing changes)
     * @throws NullPointerException if {@code wakeExecutor} is null (nothing changes)
     * @throws IllegalStateException if {@code n} is more than the permits currently held by
     *     callers (capacity minus free minus those handed to a waiting head); nothing changes then
     */
    public void release(long n, Executor wakeExecutor) {
        if (n < 0) {
            throw new IllegalArgumentException(
                    "release(" + n + ", executor): the number of permits must not be negative");
        }
        if (wakeExecutor == null) {
            throw new NullPointerException("release(" + n + ", null): the executor is null");
        }
        if (n == 0) {
            return;
        }
        long held = core.release(n, wakeExecutor);
        if (held >= 0) {
            throw overRelease("release(" + n + ", executor)", held);
        }
    }

    private IllegalStateException overRelease(long n, long held) {
        return overRelease("release(" + n + ")", held);
    }

    private IllegalStateException overRelease(String call, long held) {
        return new IllegalStateException(call + ": exceeds the " + held + " permits held (capacity " + core.capacity
                + "), so nothing was released");
    }

    /**
     * Closes the semaphore. Idempotent. Every waiting acquisition fails (futures, suspended
     * coroutines and blocked threads with {@link SemaphoreClosedException}; a callback
     * {@link Acquisition} reports {@link Acquisition#isClosed()} and its waker runs); the permits
     * they were partially handed become free again; later acquisitions fail the same way and
     * {@link #tryAcquire(long)} returns {@code false}. {@link #release(long)} keeps working.
     */
    public void close() {
        core.close();
    }

    /**
     * Returns a description for logs.
     *
     * @return for example {@code "Semaphore[capacity=16, available=0, queued=2, closed=false]"}
     */
    @Override
    public String toString() {
        return "Semaphore[" + (name == null ? "" : "name=" + name + ", ") + "capacity=" + core.capacity + ", available="
                + core.availablePermits() + ", queued=" + core.queueLength() + ", closed=" + core.isClosed() + "]";
    }
}
