// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

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
 * mutex.lockBlocking();
 * try {
 *     account.debit(amount);
 * } finally {
 *     mutex.unlock();
 * }
 * }</pre>
 *
 * <p>Fairness: waiters are served strictly in arrival order; {@link #tryLock()} fails while anyone
 * waits (no barging). Memory consistency: actions before {@link #unlock()} happen-before actions
 * after the lock is next acquired.
 */
public final class Mutex {

    private final BatchSemaphore core;

    /** Creates an unlocked mutex. */
    public Mutex() {
        this.core = new BatchSemaphore(1, this);
    }

    /**
     * Creates an unlocked mutex whose waits are told to {@code listener}: each lock that has to
     * wait, how and when its wait ends (weight 1), as for a semaphore's
     * {@link Semaphore.Builder#waitListener(WaitListener)}. A lock taken at once calls nothing.
     *
     * <pre>{@code
     * Mutex journal = new Mutex(new JfrWaitListener("journal"));   // handoff-jfr
     * }</pre>
     *
     * @param listener the listener, see {@link WaitListener} for the threads it runs on
     * @throws NullPointerException if {@code listener} is null
     */
    public Mutex(WaitListener listener) {
        if (listener == null) {
            throw new NullPointerException("new Mutex(null): the listener is null");
        }
        this.core = new BatchSemaphore(1, Long.MAX_VALUE, Integer.MAX_VALUE, listener, this);
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
     * Locks, parking for at most {@code timeout}; see {@link Semaphore#tryAcquire(long, Duration)}.
     *
     * @param timeout the longest wait; zero or negative does not wait
     * @return {@code true} if locked
     * @throws InterruptedException if interrupted before the lock was granted (nothing is held)
     * @throws NullPointerException if {@code timeout} is null
     */
    public boolean tryLock(Duration timeout) throws InterruptedException {
        if (timeout == null) {
            throw new NullPointerException("tryLock(null): the timeout is null");
        }
        return core.tryAcquire(1, Semaphore.saturatedNanos(timeout), "tryLock(" + timeout + ")", null);
    }

    /**
     * The callback primitive: locks now or when the queue reaches this call, then runs the waker.
     * Settles through the waker exactly once ({@link Waker#claim()} then {@link Waker#wake()}),
     * possibly before this method returns; see {@link Semaphore#acquire(long, Waker)}.
     *
     * @param waker what to run once the lock is held
     * @return the handle of the wait, to {@linkplain Acquisition#cancel() cancel} it
     * @throws NullPointerException if {@code waker} is null
     */
    public Acquisition lock(Waker waker) {
        if (waker == null) {
            throw new NullPointerException("lock(null): the waker is null");
        }
        return core.acquire(1, waker, null, "lock(waker)");
    }

    /**
     * Starts {@code acquisition}, a subclass of {@link Acquisition} that is its own waker, as a
     * wait for the lock: exactly {@link #lock(Waker)} with the acquisition's {@code claim()} and
     * {@code wake()} in place of a waker's; see {@link Semaphore#startAcquisition(long, Acquisition)}.
     *
     * @param acquisition a new, never started acquisition
     * @param <A> the acquisition's type
     * @return {@code acquisition}, now waiting or already settled
     * @throws NullPointerException if {@code acquisition} is null
     * @throws IllegalStateException if {@code acquisition} was already started (nothing changes)
     */
    public <A extends Acquisition> A startLock(A acquisition) {
        if (acquisition == null) {
            throw new NullPointerException("startLock(null): the acquisition is null");
        }
        return core.start(acquisition, 1, null, "startLock()");
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
    public <T> CompletableFuture<T> withLockAsync(Supplier<? extends CompletionStage<T>> body) {
        if (body == null) {
            throw new NullPointerException("withLockAsync(null): the body is null");
        }
        return ScopedAsync.run(core.acquireAsync(1, "withLockAsync()", null), this::unlock, body, "withLockAsync()");
    }

    /**
     * Locks, returning a future completed when the lock is held. A cancelled future never holds
     * the lock, even if the cancel races the grant; see {@link Semaphore#acquireAsync(long)}.
     *
     * @return a future completed once this caller holds the lock
     */
    public CompletableFuture<Void> lockAsync() {
        return core.acquireAsync(1, "lockAsync()", null);
    }

    /**
     * Locks, parking the calling thread (safe on virtual threads: no monitor is held). On interrupt
     * the wait is withdrawn and {@link InterruptedException} is thrown, unless the grant won the
     * race: then it returns normally with the interrupt flag set.
     *
     * @throws InterruptedException if interrupted before the lock was granted (nothing is held)
     */
    public void lockBlocking() throws InterruptedException {
        core.acquireBlocking(1, "lockBlocking()", null);
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
     * during the call. Constant time, and never waits for the internal lock.
     *
     * @return the queue length
     */
    public int queueLength() {
        return core.queueLength();
    }

    /**
     * Returns a description for logs.
     *
     * @return for example {@code "Mutex[locked, queued=2]"}
     */
    @Override
    public String toString() {
        return "Mutex[" + (isLocked() ? "locked" : "unlocked") + ", queued=" + core.queueLength() + "]";
    }
}
