// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The part of {@link Semaphore} built on its basic faces: the up-to requests (a FIFO request for
 * between {@code min} and {@code max} permits) and the scoped calls (acquire, run a body, release
 * exactly once however it ends), with the argument checks every face shares. Its public methods
 * are {@link Semaphore}'s and documented there; the class itself is not public.
 */
abstract class SemaphoreBase implements PrimitiveView {

    final FifoCore core;

    /** The name given to the builder, or null. */
    final @Nullable String name;

    /** The leak detection of its handles ({@link LeakDetection}), or null while it is off. */
    final @Nullable LeakDetection leaks;

    /** How a {@link Permits} handle of this semaphore gives its permits back (a class, not a lambda: see {@link PermitHandles.GiveBack}). */
    final PermitHandles.GiveBack byCount = new PermitHandles.GiveBack() {
        @Override
        public void giveBack(long permits) {
            release(permits);
        }
    };

    static long checkCapacity(String call, long permits) {
        if (permits < 0 || permits > Semaphore.MAX_PERMITS) {
            throw new IllegalArgumentException(call + "(" + permits
                    + "): the capacity must be between 0 and Semaphore.MAX_PERMITS (" + Semaphore.MAX_PERMITS + ")");
        }
        return permits;
    }

    /**
     * Takes as many permits as are free, up to {@code max}, without ever waiting: if nobody waits
     * and the semaphore is not closed, takes {@code min(max, availablePermits())} (maybe 0) and
     * returns it; otherwise returns 0. Never barges: while anyone waits it takes nothing.
     *
     * <pre>{@code
     * long rows = budget.tryAcquireUpTo(batch.size());   // send what fits now, keep the rest
     * try { send(batch.subList(0, (int) rows)); } finally { budget.release(rows); }
     * }</pre>
     *
     * @param max the most permits to take, {@code >= 0}
     * @return the permits taken, to be released later; {@code 0} if none
     * @throws IllegalArgumentException if {@code max < 0}
     */
    public long tryAcquireUpTo(long max) {
        if (max < 0) {
            throw new IllegalArgumentException("tryAcquireUpTo(" + max + "): max must not be negative");
        }
        return core.tryAcquireRange(0, max);
    }

    /**
     * Never waits: if nobody waits, the semaphore is not closed and at least {@code min} permits are
     * free, takes as many as are free, up to {@code max}, and returns how many; otherwise takes
     * nothing and returns 0. The all-or-nothing form of {@link #tryAcquireUpTo(long)}: it never
     * takes fewer than {@code min}. Never barges. As with {@link Semaphore#tryAcquire(long)}, a {@code min}
     * above the capacity is not an error: it simply never fits (the capacity may change at any
     * time, see {@link Semaphore#setCapacity(long)}).
     *
     * <pre>{@code
     * long bytes = budget.tryAcquireUpTo(64 << 10, 4 << 20);   // at least 64 KiB, or nothing
     * if (bytes > 0) { try { readChunk(bytes); } finally { budget.release(bytes); } }
     * }</pre>
     *
     * @param min the least permits worth taking, {@code 1 <= min <= max}
     * @param max the most permits to take
     * @return the permits taken, from {@code min} to {@code max}, to be released later; {@code 0} if none
     * @throws IllegalArgumentException if {@code min < 1} or {@code min > max}
     */
    public long tryAcquireUpTo(long min, long max) {
        if (min < 1 || min > max) {
            throw new IllegalArgumentException("tryAcquireUpTo(" + min + ", " + max + "): needs 1 <= min <= max");
        }
        return core.tryAcquireRange(min, max);
    }

    /**
     * One FIFO request for between {@code min} and {@code max} permits: it waits in the queue like
     * any other, is granted as soon as at least {@code min} permits can be given to it, and then
     * takes as many as are being handed out (or are free), up to {@code max}. The future completes
     * with the {@link Permits} handle, whose {@link Permits#permits()} is the number taken, which
     * the caller must release. Same cancellation, close and shedding rules as
     * {@link Semaphore#acquireAsync(long)} (the shedding weight is {@code min}).
     *
     * <pre>{@code
     * budget.acquireUpToAsync(64 << 10, 4 << 20)            // 64 KiB to 4 MiB of buffer
     *       .thenAccept(p -> readChunk(p.permits()).whenComplete((r, e) -> p.release()));
     * }</pre>
     *
     * @param min the least permits to be granted with, {@code 1 <= min <= max}, {@code min <= capacity()}
     * @param max the most permits to take
     * @return a future completed with the handle of the permits taken
     * @throws IllegalArgumentException if {@code min < 1}, {@code min > max} or {@code min > capacity()}
     */
    public CompletableFuture<Permits> acquireUpToAsync(long min, long max) {
        checkRange("acquireUpToAsync", min, max);
        String call = "acquireUpToAsync(" + min + ", " + max + ")";
        return core.acquireUpToAsync(min, max, call, byCount, leaks);
    }

    /**
     * The blocking form of {@link #acquireUpToAsync(long, long)}: parks until at least {@code min}
     * permits are granted, and returns their handle ({@link Permits#permits()}: how many were
     * taken, at most {@code max}). Interrupt, close and shedding as for {@link Semaphore#acquireBlocking(long)}.
     *
     * <pre>{@code
     * try (Permits p = budget.acquireUpToBlocking(64 << 10, 4 << 20)) {
     *     readChunk(p.permits());
     * }
     * }</pre>
     *
     * @param min the least permits to be granted with, {@code 1 <= min <= max}, {@code min <= capacity()}
     * @param max the most permits to take
     * @return the handle of the permits taken, to be released later
     * @throws InterruptedException if interrupted before the grant (nothing is held)
     * @throws IllegalArgumentException if {@code min < 1}, {@code min > max} or {@code min > capacity()}
     * @throws SemaphoreClosedException if the semaphore is or gets closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and the queue is full
     */
    public Permits acquireUpToBlocking(long min, long max) throws InterruptedException {
        checkRange("acquireUpToBlocking", min, max);
        String call = "acquireUpToBlocking(" + min + ", " + max + ")";
        return core.acquireUpToBlocking(min, max, call, byCount, leaks);
    }

    void checkRange(String call, long min, long max) {
        checkRange(null, call, min, max);
    }

    /**
     * As {@link #checkRange(String, long, long)}; a min above the capacity names {@code a}'s own call
     * ({@link Acquisition#callName()}) if it has one, as the core's refusals do.
     */
    void checkRange(Acquisition a, String call, long min, long max) {
        if (min < 1 || min > max) {
            throw new IllegalArgumentException(call + "(" + min + ", " + max + "): needs 1 <= min <= max");
        }
        long c = core.capacity;
        if (min > c) {
            String own = a == null ? null : CoreMessages.callOf(a, null);
            String described = own == null ? call + "(" + min + ", " + max + ")" : CoreMessages.describe(own, min, max);
            throw new IllegalArgumentException(
                    described + ": min exceeds the capacity " + c + ", so it could never be granted");
        }
    }

    /**
     * Runs {@code body} holding {@code n} permits and releases them when the stage it returns
     * completes, however it completes: the asynchronous {@code try/finally}. The permits are
     * acquired as by {@link Semaphore#acquireAsync(long)}; {@code body} runs once they are granted (on the
     * granting thread; hop with the stage's {@code *Async} methods if it is long). The permits are
     * released exactly once if, and only if, they were granted: when the stage completes normally
     * or exceptionally, or when {@code body} throws or returns {@code null}. If the acquisition
     * fails (closed), the result fails with the same exception and nothing is released.
     * Cancelling the result (or failing it, as {@code orTimeout} does) before the grant withdraws
     * the wait; a grant that wins that race is released without running {@code body}. Once
     * {@code body} started, cancelling the result does not stop it; its permits come back when its
     * stage completes.
     *
     * <pre>{@code
     * CompletableFuture<Response> r = budget.withPermitsAsync(request.bytes(),
     *         () -> client.sendAsync(request));          // released when the send completes
     * }</pre>
     *
     * @param n the number of permits
     * @param body the work to run holding the permits; returns the stage whose completion releases them
     * @param <T> the result type
     * @return a future completed with the stage's result, or failed with its, {@code body}'s or the
     *     acquisition's exception
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     * @throws NullPointerException if {@code body} is null
     */
    public <T extends @Nullable Object> CompletableFuture<T> withPermitsAsync(
            long n, Supplier<? extends CompletionStage<T>> body) {
        if (n < 0) {
            throw negative("withPermitsAsync", n);
        }
        if (body == null) {
            throw new NullPointerException("withPermitsAsync(" + n + ", null): the body is null");
        }
        checkFits("withPermitsAsync", n);
        String call = "withPermitsAsync(" + n + ")";
        return ScopedAsync.run(core.acquireAsync(n, call, null, byCount), () -> release(n), body, call);
    }

    /**
     * Runs {@code body} holding {@code n} permits and releases them when it returns or throws: the
     * blocking {@code try/finally}. The permits are acquired as by {@link Semaphore#acquireBlocking(long)}
     * (FIFO, parking the calling thread, safe on virtual threads); {@code body} runs on this thread
     * once they are granted, and they are released exactly once, however it ends. If the wait
     * fails (interrupt, close, a full queue), {@code body} does not run and nothing is held.
     *
     * <pre>{@code
     * Response r = inFlight.withPermitsBlocking(body.length, () -> client.send(body));
     * }</pre>
     *
     * @param n the number of permits
     * @param body the work to run holding them
     * @param <T> the result type
     * @return what {@code body} returned
     * @throws Exception what {@code body} threw, after the permits were released
     * @throws InterruptedException if interrupted before the grant (nothing held, {@code body} not run)
     * @throws SemaphoreClosedException if the semaphore is or gets closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and a queue bound is reached
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     * @throws NullPointerException if {@code body} is null
     */
    public <T extends @Nullable Object> T withPermitsBlocking(long n, java.util.concurrent.Callable<T> body)
            throws InterruptedException, Exception {
        if (n < 0) {
            throw negative("withPermitsBlocking", n);
        }
        if (body == null) {
            throw new NullPointerException("withPermitsBlocking(" + n + ", null): the body is null");
        }
        checkFits("withPermitsBlocking", n);
        core.acquireBlocking(n, "withPermitsBlocking", null, byCount);
        try {
            return body.call();
        } finally {
            release(n);
        }
    }

    /**
     * Runs {@code body} holding {@code n} permits if they are granted within {@code timeout}, and
     * releases them when it returns or throws; as {@link #withPermitsBlocking(long, java.util.concurrent.Callable)}
     * with the wait of {@link Semaphore#tryAcquireBlocking(long, Duration)}. If the permits do not come in
     * time, the wait is withdrawn, nothing is held, {@code body} does not run and the result is
     * empty.
     *
     * <pre>{@code
     * Optional<Rows> rows = pool.tryWithPermitsBlocking(1, Duration.ofMillis(250), () -> db.query(sql));
     * if (rows.isEmpty()) throw new TimeoutException("no connection within 250 ms");
     * }</pre>
     *
     * @param n the number of permits
     * @param timeout the longest wait; zero or negative does not wait
     * @param body the work to run holding them; its result must not be null (a null result reads
     *     as empty)
     * @param <T> the result type
     * @return what {@code body} returned, or empty if the permits did not come in time
     * @throws Exception what {@code body} threw, after the permits were released
     * @throws InterruptedException if interrupted before the grant (nothing held, {@code body} not run)
     * @throws SemaphoreClosedException if the semaphore is or gets closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and a queue bound is reached
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     * @throws NullPointerException if {@code timeout} or {@code body} is null
     */
    public <T> java.util.Optional<T> tryWithPermitsBlocking(
            long n, Duration timeout, java.util.concurrent.Callable<T> body) throws InterruptedException, Exception {
        if (n < 0) {
            throw negative("tryWithPermitsBlocking", n);
        }
        if (timeout == null) {
            throw new NullPointerException("tryWithPermitsBlocking(" + n + ", null, body): the timeout is null");
        }
        if (body == null) {
            throw new NullPointerException(
                    "tryWithPermitsBlocking(" + n + ", " + timeout + ", null): the body is null");
        }
        checkFits("tryWithPermitsBlocking", n);
        if (!core.tryAcquire(n, saturatedNanos(timeout), "tryWithPermitsBlocking(" + n + ", " + timeout + ")", null)) {
            return java.util.Optional.empty();
        }
        try {
            return java.util.Optional.ofNullable(body.call());
        } finally {
            release(n);
        }
    }

    void checkFits(String call, long n) {
        checkFits(null, call, n);
    }

    /**
     * As {@link #checkFits(String, long)}, naming {@code a}'s own call ({@link Acquisition#callName()})
     * if it has one, as the core's refusals do.
     */
    void checkFits(Acquisition a, String call, long n) {
        long c = core.capacity;
        if (n > c) {
            throw new IllegalArgumentException(CoreMessages.describe(a == null ? call : CoreMessages.callOf(a, call), n)
                    + ": exceeds the capacity " + c + ", so it could never be granted");
        }
    }

    static IllegalArgumentException negative(String call, long n) {
        return new IllegalArgumentException(call + "(" + n + "): the number of permits must not be negative");
    }

    /** {@link Duration#toNanos()} that saturates instead of throwing on huge durations. */
    static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException tooLarge) {
            return d.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
    }

    SemaphoreBase(
            long capacity,
            long maxQueuedPermits,
            int maxQueueLength,
            @Nullable WaitListener listener,
            @Nullable String name,
            @Nullable LeakDetection chosen) {
        this.core = new FifoCore(capacity, maxQueuedPermits, maxQueueLength, listener, this);
        this.name = name;
        LeakDetection mode = chosen == null ? LeakDetection.DEFAULT : chosen;
        this.leaks = mode == LeakDetection.OFF ? null : mode;
    }

    /**
     * Returns {@code n} permits; see {@link Semaphore#release(long)}.
     *
     * @param n the permits
     */
    public abstract void release(long n);
}
