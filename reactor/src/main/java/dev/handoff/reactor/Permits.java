// SPDX-License-Identifier: Apache-2.0
package dev.handoff.reactor;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Permits (or a lock) held by the subscriber that received this handle, to be given back with
 * {@link #release()}. Emitted by {@link ReactorSemaphores#acquire(dev.handoff.Semaphore, long)},
 * {@link ReactorSemaphores#lock(dev.handoff.Mutex)},
 * {@link ReactorSemaphores#readLock(dev.handoff.RwLock)} and
 * {@link ReactorSemaphores#writeLock(dev.handoff.RwLock)}.
 *
 * <p>{@link #release()} is idempotent: only its first call gives the permits back, so it is safe
 * to call from several cleanup paths ({@code doFinally}, a discard hook, a {@code finally} block).
 * Whoever receives the handle in {@code onNext} owns it and must release it, also when it cancels
 * at that moment; a handle that was never delivered (the cancel reached the library first) is
 * released by the library. See {@link ReactorSemaphores#acquire(dev.handoff.Semaphore, long)} for
 * subscribers and operators that drop a value arriving as they are cancelled.
 *
 * <pre>{@code
 * ReactorSemaphores.acquire(budget, body.length)
 *         .subscribe(permits -> client.send(body, permits::release)); // the callback releases
 * }</pre>
 */
public final class Permits {

    private final long permits;
    private final Runnable release;

    /** Set once, by the first {@link #release()}; later calls find it set and do nothing. */
    private final AtomicBoolean released = new AtomicBoolean();

    Permits(long permits, Runnable release) {
        this.permits = permits;
        this.release = release;
    }

    /**
     * Returns the number of permits this handle holds: the weight asked for; {@code 1} for a mutex
     * or a read lock; {@link dev.handoff.RwLock#maxReaders()} for a write lock.
     *
     * @return the weight of this handle
     */
    public long permits() {
        return permits;
    }

    /**
     * Gives the permits back (unlocks the lock), the first time it is called; later calls do
     * nothing and return {@code false}. Waiters at the head of the queue are granted on this
     * thread, before it returns.
     *
     * @return {@code true} if this call released, {@code false} if the handle was already released
     * @throws IllegalStateException if the permits are no longer held because they were released
     *     behind this handle's back (for example a direct {@code semaphore.release(n)} or
     *     {@code mutex.unlock()}); the handle then counts as released
     */
    public boolean release() {
        if (!released.compareAndSet(false, true)) {
            return false;
        }
        release.run();
        return true;
    }

    /**
     * Returns whether {@link #release()} has been called. A snapshot.
     *
     * @return {@code true} once released
     */
    public boolean isReleased() {
        return released.get();
    }

    /**
     * Returns a description for logs.
     *
     * @return for example {@code "Permits[3, held]"}
     */
    @Override
    public String toString() {
        return "Permits[" + permits + (released.get() ? ", released]" : ", held]");
    }
}
