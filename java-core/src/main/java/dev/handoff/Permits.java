// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

/**
 * Permits (or a lock) held by whoever received this handle, given back by {@link #release()} or
 * {@link #close()} — so a try-with-resources block releases them on every path:
 *
 * <pre>{@code
 * try (Permits p = memory.acquireBlocking(body.length)) {
 *     upload(body);
 * } // released here, also when upload throws
 * }</pre>
 *
 * <p>Returned by every {@code ...Blocking} acquire and lock, and the value every {@code ...Async}
 * acquire and lock completes with. The handle is a convenience, not a requirement: a caller may
 * still release by count ({@code semaphore.release(n)}, {@code mutex.unlock()}); permits have no
 * owner. Only the first {@link #release()} gives the permits back, so it is safe to call from
 * several cleanup paths.
 */
public interface Permits extends AutoCloseable {

    /**
     * Returns how many permits this handle holds: the weight asked for, what an up-to request
     * took, {@code 1} for a mutex or a read lock, the lock's {@code maxReaders()} for a write lock.
     *
     * @return the number of permits held (unchanged by a release)
     */
    long permits();

    /**
     * Gives the permits back the first time it is called; later calls change nothing and return
     * {@code false}. Waiters at the head of the queue are granted on this thread, before it
     * returns, as by {@link Semaphore#release(long)}. A call on another thread while the first is
     * giving the permits back returns {@code false} once they are back; a call from inside that
     * give-back (a waker or a future's dependent it runs on the same thread) returns {@code false}
     * at once.
     *
     * @return {@code true} if this call released them, {@code false} if the handle was already released
     * @throws IllegalStateException if the permits are no longer held because they were given back
     *     behind this handle's back (for example by a direct {@code release(n)} or {@code unlock()}):
     *     nothing changes in the semaphore, and the handle counts as released from then on
     */
    boolean release();

    /**
     * Returns whether {@link #release()} (or {@link #close()}) has been called. A snapshot.
     *
     * @return {@code true} once released
     */
    boolean isReleased();

    /**
     * Same as {@link #release()}, for try-with-resources: gives the permits back unless the handle
     * was already released. Never throws a checked exception.
     *
     * @throws IllegalStateException as {@link #release()} does
     */
    @Override
    default void close() {
        release();
    }
}
