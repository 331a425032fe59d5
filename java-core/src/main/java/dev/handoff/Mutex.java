// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A strictly FIFO mutual-exclusion lock: a {@link Semaphore} of one permit, with the same queue,
 * the same cancellation guarantees and the same faces (callback, future, blocking, and
 * {@code suspend} in the Kotlin module). Not reentrant, and not owned by a thread: any thread may
 * unlock it, which is what asynchronous code needs (the lock is often taken on one thread and
 * released on another).
 *
 * <pre>{@code
 * Mutex mutex = new Mutex();
 *
 * try (Permits held = mutex.lockBlocking()) {
 *     account.debit(amount);
 * }                                                    // unlocked here
 * }</pre>
 *
 * <p>Method names follow {@link Semaphore}'s: no suffix never waits ({@link #tryLock()}),
 * {@code Then} calls back, {@code Async} returns a future, {@code Blocking} parks the thread.
 *
 * <p>Fairness: waiters are served strictly in arrival order; {@link #tryLock()} fails while anyone
 * waits (no barging). Memory consistency: actions before {@link #unlock()} happen-before actions
 * after the lock is next acquired.
 */
public final class Mutex implements PrimitiveView {

    private final FifoCore core;

    /** The name given to the builder, or null. */
    private final @Nullable String name;

    /** How a {@link Permits} handle of this mutex unlocks it (a class, not a lambda: see {@link PermitHandles.GiveBack}). */
    private final PermitHandles.GiveBack unlocker = new PermitHandles.GiveBack() {
        @Override
        public void giveBack(long permits) {
            unlock();
        }
    };

    /** The leak detection of its handles ({@link LeakDetection}), or null while it is off. */
    private final @Nullable LeakDetection leaks;

    /** Creates an unlocked mutex. For a name, a queue bound or a listener, see {@link #builder()}. */
    public Mutex() {
        this.core = new FifoCore(1, this);
        this.name = null;
        this.leaks = LeakDetection.DEFAULT == LeakDetection.OFF ? null : LeakDetection.DEFAULT;
    }

    private Mutex(Builder b) {
        this.core = new FifoCore(1, Long.MAX_VALUE, b.maxQueueLength, b.listener, this);
        this.name = b.name;
        LeakDetection mode = b.leakDetection == null ? LeakDetection.DEFAULT : b.leakDetection;
        this.leaks = mode == LeakDetection.OFF ? null : mode;
        if (b.listener != null && b.name != null) {
            b.listener.attached(b.name);
        }
    }

    /**
     * Starts building a mutex with options: a name, a bound on the wait queue, a listener.
     *
     * <pre>{@code
     * Mutex journal = Mutex.builder()
     *         .name("journal")
     *         .maxQueueLength(1_000)                   // shed the 1,001st waiter
     *         .listener(new JfrWaitListener())           // handoff-jfr: events named "journal"
     *         .build();
     * }</pre>
     *
     * @return a builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Options of a {@link Mutex}: see {@link Mutex#builder()}. Not thread-safe; each
     * {@link #build()} makes a new mutex.
     */
    public static final class Builder extends TrackedBuilder<Builder, Mutex> {

        private Builder() {}

        /**
         * Builds the mutex, unlocked.
         *
         * @return a new mutex with these options
         */
        @Override
        public Mutex build() {
            return new Mutex(this);
        }
    }

    @Override
    public @Nullable String name() {
        return name;
    }

    /**
     * Locks at once if the mutex is unlocked and nobody waits; never waits, never queues.
     *
     * @return {@code true} if locked by this call, which must be followed by {@link #unlock()}
     */
    public boolean tryLock() {
        return core.tryAcquire(1);
    }

    /**
     * Locks, parking for at most {@code timeout}; see {@link Semaphore#tryAcquireBlocking(long, Duration)}.
     *
     * <pre>{@code
     * if (!mutex.tryLockBlocking(Duration.ofMillis(50))) return Result.BUSY;
     * try { account.debit(amount); } finally { mutex.unlock(); }
     * }</pre>
     *
     * @param timeout the longest wait; zero or negative does not wait
     * @return {@code true} if locked, to be followed by {@link #unlock()}
     * @throws InterruptedException if interrupted before the lock was granted (nothing is held)
     * @throws SemaphoreClosedException if the mutex is or gets closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and the queue is full
     * @throws NullPointerException if {@code timeout} is null
     */
    public boolean tryLockBlocking(Duration timeout) throws InterruptedException {
        if (timeout == null) {
            throw new NullPointerException("tryLockBlocking(null): the timeout is null");
        }
        return core.tryAcquire(1, Semaphore.saturatedNanos(timeout), "tryLockBlocking(" + timeout + ")", null);
    }

    /**
     * Locks without blocking a thread, giving up after {@code timeout}: the future completes with
     * {@code true} once locked (the caller must unlock), {@code false} if the timeout came first
     * (nothing held); see {@link Semaphore#tryAcquireAsync(long, Duration)}.
     *
     * @param timeout the longest wait; zero or negative does not wait
     * @return a future of whether the lock was granted
     * @throws NullPointerException if {@code timeout} is null
     */
    public CompletableFuture<Boolean> tryLockAsync(Duration timeout) {
        if (timeout == null) {
            throw new NullPointerException("tryLockAsync(null): the timeout is null");
        }
        return core.tryAcquireAsync(1, Semaphore.saturatedNanos(timeout), "tryLockAsync(" + timeout + ")", null);
    }

    /**
     * The callback primitive: locks now or when the queue reaches this call, then runs the waker.
     * Settles through the waker exactly once ({@link Waker#claim()} then {@link Waker#wake()}),
     * possibly before this method returns; see {@link Semaphore#acquireThen(long, Waker)}.
     *
     * @param waker what to run once the lock is held
     * @return the handle of the wait, to {@linkplain Acquisition#cancel() cancel} it
     * @throws NullPointerException if {@code waker} is null
     */
    public Acquisition lockThen(Waker waker) {
        return core.lockThen(1, waker, null, "lockThen");
    }

    /** {@link dev.handoff.spi.Adapters#startLock(Mutex, Acquisition)}. */
    <A extends Acquisition> A startLock(A acquisition) {
        return core.startLock(acquisition, 1, null, "startLock");
    }

    /**
     * Runs {@code body} holding the lock and unlocks when the stage it returns completes, however it
     * completes: the asynchronous {@code try/finally}; see
     * {@link Semaphore#withPermitsAsync(long, java.util.function.Supplier)} for the rules (released
     * exactly once iff granted; a failed acquisition fails the result and releases nothing;
     * cancelling the result before the grant withdraws the wait).
     *
     * <pre>{@code
     * CompletableFuture<Void> saved = mutex.withLockAsync(() -> store.writeAsync(snapshot));
     * }</pre>
     * Prefer it to unlocking in a {@code whenComplete} on {@link #lockAsync()}, which also runs
     * when the wait failed (cancelled, timed out) and nothing was locked by this caller; and to
     * handing out a {@code lockAsync().thenApply(..)} chain that unlocks in {@code finally}: if its
     * caller cancels it before the grant, the lock still comes, the cancelled stage is skipped and
     * nothing unlocks. Cancelling this method's result before the grant withdraws the wait.
     *
     * @param body the work to run holding the lock; returns the stage whose completion unlocks
     * @param <T> the result type
     * @return a future completed with the stage's result, or failed with its, {@code body}'s or the
     *     acquisition's exception
     * @throws NullPointerException if {@code body} is null
     */
    public <T extends @Nullable Object> CompletableFuture<T> withLockAsync(
            Supplier<? extends CompletionStage<T>> body) {
        return core.withLockAsync(1, body, "withLockAsync", null, unlocker, this::unlock);
    }

    /**
     * Locks, returning a future completed when the lock is held. A cancelled future never holds
     * the lock, even if the cancel races the grant; see {@link Semaphore#acquireAsync(long)}.
     *
     * <pre>{@code
     * mutex.lockAsync().thenAccept(held -> {
     *     try { account.debit(amount); } finally { held.release(); }
     * });
     * }</pre>
     *
     * @return a future completed with the lock's handle once this caller holds the lock
     */
    public CompletableFuture<Permits> lockAsync() {
        return core.acquireAsync(1, "lockAsync()", unlocker, leaks);
    }

    /**
     * Locks, parking the calling thread (safe on virtual threads: no monitor is held). On interrupt
     * the wait is withdrawn and {@link InterruptedException} is thrown, unless the grant won the
     * race: then it returns normally with the interrupt flag set.
     *
     * @return the lock's handle: {@link Permits#close()} (or {@link #unlock()}) unlocks
     * @throws InterruptedException if interrupted before the lock was granted (nothing is held)
     * @throws SemaphoreClosedException if the mutex is or gets closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and the queue is full
     */
    public Permits lockBlocking() throws InterruptedException {
        return core.acquireBlocking(1, "lockBlocking()", unlocker, leaks);
    }

    /**
     * Unlocks, handing the lock directly to the longest waiter if there is one.
     *
     * @throws IllegalStateException if the mutex is not locked (nothing changes)
     */
    public void unlock() {
        unlock(null, "unlock()");
    }

    /**
     * Unlocks like {@link #unlock()}, but the waker of the waiter it hands the lock to runs on
     * {@code wakeExecutor}, not on this thread. The lock is handed over before this method
     * returns; only the {@code wake()} call moves (see {@link Semaphore#release(long, Executor)}).
     * If the executor refuses the task, the waker runs on this thread.
     *
     * @param wakeExecutor where the wake-up caused by this unlock runs
     * @throws NullPointerException if {@code wakeExecutor} is null (nothing changes)
     * @throws IllegalStateException if the mutex is not locked (nothing changes)
     */
    public void unlock(Executor wakeExecutor) {
        if (wakeExecutor == null) {
            throw new NullPointerException("unlock(null): the executor is null");
        }
        unlock(wakeExecutor, "unlock(executor)");
    }

    private void unlock(Executor wakes, String call) {
        if (core.release(1, wakes) >= 0) {
            throw new IllegalStateException(call + ": the mutex is not locked");
        }
    }

    /**
     * Returns whether someone holds the lock. A snapshot, for monitoring and assertions.
     *
     * @return {@code true} if locked
     */
    public boolean isLocked() {
        return core.availablePermits() == 0;
    }

    /**
     * Returns the number of callers waiting for the lock. A snapshot, exact at some moment
     * during the call. Constant time; never takes or queues for the internal lock (see
     * {@link Semaphore#queuedPermits()}).
     *
     * @return the queue length
     */
    @Override
    public long queuedPermits() {
        return core.queuedPermits();
    }

    @Override
    public int queueLength() {
        return core.queueLength();
    }

    /**
     * Closes the mutex, as {@link Semaphore#close()} closes a semaphore. Idempotent. Every waiting
     * lock fails (futures and blocked threads with {@link SemaphoreClosedException}, a callback's
     * {@link Acquisition#isClosed()}), later locks fail the same way and {@link #tryLock()} returns
     * {@code false}; {@link #unlock()} keeps working, so the holder can still let go.
     */
    public void close() {
        core.close();
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
     * Returns a description for logs.
     *
     * @return for example {@code "Mutex[name=journal, locked, queued=2]"}
     */
    @Override
    public String toString() {
        return "Mutex[" + (name == null ? "" : "name=" + name + ", ") + (isLocked() ? "locked" : "unlocked")
                + ", queued=" + core.queueLength() + (isClosed() ? ", closed" : "") + "]";
    }
}
