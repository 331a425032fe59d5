// SPDX-License-Identifier: Apache-2.0
package dev.handoff.spi;

import dev.handoff.Acquisition;
import dev.handoff.FairShareSemaphore;
import dev.handoff.Mutex;
import dev.handoff.RwLock;
import dev.handoff.Semaphore;
import dev.handoff.Waker;

/**
 * Hooks for adapters (a coroutine bridge, a reactive operator, an event-loop integration) that
 * create one object per wait anyway: each starts an {@link Acquisition} subclass that is its own
 * waker, as exactly the wait the face's {@code ...Then(.., Waker)} call would start, with the
 * acquisition's {@code claim()} and {@code wake()} in place of a waker's and without the
 * allocation of a separate handle. Application code uses the faces themselves
 * ({@code acquireBlocking}, {@code acquireAsync}, {@code acquireThen}, and the Kotlin
 * {@code suspend} functions); these hooks are kept out of their completion lists.
 *
 * <pre>{@code
 * final class Signal extends Acquisition {
 *     final CountDownLatch done = new CountDownLatch(1);
 *     @Override protected void wake() { done.countDown(); }
 * }
 * Signal s = Adapters.startAcquisition(semaphore, 4, new Signal());
 * try {
 *     s.done.await();
 * } catch (InterruptedException e) {
 *     if (!s.cancel() && s.isGranted()) semaphore.release(4); // the grant won the race
 *     throw e;
 * }
 * if (s.isGranted()) { try { work(); } finally { semaphore.release(4); } } // else: nothing held
 * }</pre>
 *
 * <p>An acquisition whose {@code provisionalGrant()} returns {@code true} gets a grant made while
 * it waits as a provisional one: its permits count as held by nobody until it calls
 * {@code confirmGrant()} or {@code undoGrant(executor)} (see {@link Acquisition}).
 */
public final class Adapters {

    private static volatile Access access;

    private Adapters() {}

    /**
     * Starts {@code acquisition} as a wait for {@code n} permits of {@code semaphore}: exactly
     * {@link Semaphore#acquireThen(long, Waker)} with the acquisition as its own waker.
     *
     * @param semaphore the semaphore
     * @param n the number of permits
     * @param acquisition a new, never started acquisition
     * @param <A> the acquisition's type
     * @return {@code acquisition}, now waiting or already settled
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > capacity()}
     * @throws NullPointerException if {@code semaphore} or {@code acquisition} is null
     * @throws IllegalStateException if {@code acquisition} was already started (nothing changes)
     * @throws dev.handoff.SemaphoreRejectedException if it would have to wait and the queue is full
     *     (nothing changes; the acquisition stays unstarted)
     */
    public static <A extends Acquisition> A startAcquisition(Semaphore semaphore, long n, A acquisition) {
        return access(semaphore, acquisition, "startAcquisition").startAcquisition(semaphore, n, acquisition);
    }

    /**
     * The up-to form of {@link #startAcquisition(Semaphore, long, Acquisition)}: one FIFO request
     * for between {@code min} and {@code max} permits, with the queue, shedding (by the weight
     * {@code min}) and close rules of {@link Semaphore#acquireUpToAsync(long, long)}. It is granted
     * as soon as at least {@code min} permits can be given to it, and then takes as many as are
     * being handed out (or are free), up to {@code max}. Until the grant
     * {@link Acquisition#permits()} returns {@code max}; once {@link Acquisition#isGranted()}, it
     * returns the number taken, which is what the caller must release (also when the waiting party
     * is gone by then).
     *
     * <pre>{@code
     * Signal s = Adapters.startAcquisitionUpTo(budget, 64 << 10, 4 << 20, new Signal());
     * s.done.await();
     * if (s.isGranted()) {
     *     long bytes = s.permits();                              // 64 KiB to 4 MiB
     *     try { readChunk(bytes); } finally { budget.release(bytes); }
     * }
     * }</pre>
     *
     * @param semaphore the semaphore
     * @param min the least permits to be granted with, {@code 1 <= min <= max}, {@code min <= capacity()}
     * @param max the most permits to take
     * @param acquisition a new, never started acquisition
     * @param <A> the acquisition's type
     * @return {@code acquisition}, now waiting or already settled
     * @throws IllegalArgumentException if {@code min < 1}, {@code min > max} or {@code min > capacity()}
     * @throws NullPointerException if {@code semaphore} or {@code acquisition} is null
     * @throws IllegalStateException if {@code acquisition} was already started (nothing changes)
     * @throws dev.handoff.SemaphoreRejectedException if it would have to wait and the queue is full
     *     (nothing changes; the acquisition stays unstarted)
     */
    public static <A extends Acquisition> A startAcquisitionUpTo(
            Semaphore semaphore, long min, long max, A acquisition) {
        return access(semaphore, acquisition, "startAcquisitionUpTo")
                .startAcquisitionUpTo(semaphore, min, max, acquisition);
    }

    /**
     * Starts {@code acquisition} as a wait for the lock: exactly {@link Mutex#lockThen(Waker)} with
     * the acquisition as its own waker.
     *
     * @param mutex the mutex
     * @param acquisition a new, never started acquisition
     * @param <A> the acquisition's type
     * @return {@code acquisition}, now waiting or already settled
     * @throws NullPointerException if {@code mutex} or {@code acquisition} is null
     * @throws IllegalStateException if {@code acquisition} was already started (nothing changes)
     */
    public static <A extends Acquisition> A startLock(Mutex mutex, A acquisition) {
        return access(mutex, acquisition, "startLock").startLock(mutex, acquisition);
    }

    /**
     * Starts {@code acquisition} as a wait for a read lock: exactly {@link RwLock#readLockThen(Waker)}
     * with the acquisition as its own waker.
     *
     * @param lock the read-write lock
     * @param acquisition a new, never started acquisition
     * @param <A> the acquisition's type
     * @return {@code acquisition}, now waiting or already settled
     * @throws NullPointerException if {@code lock} or {@code acquisition} is null
     * @throws IllegalStateException if {@code acquisition} was already started (nothing changes)
     */
    public static <A extends Acquisition> A startReadLock(RwLock lock, A acquisition) {
        return access(lock, acquisition, "startReadLock").startReadLock(lock, acquisition);
    }

    /**
     * Starts {@code acquisition} as a wait for the write lock: exactly
     * {@link RwLock#writeLockThen(Waker)} with the acquisition as its own waker.
     *
     * @param lock the read-write lock
     * @param acquisition a new, never started acquisition
     * @param <A> the acquisition's type
     * @return {@code acquisition}, now waiting or already settled
     * @throws NullPointerException if {@code lock} or {@code acquisition} is null
     * @throws IllegalStateException if {@code acquisition} was already started (nothing changes)
     */
    public static <A extends Acquisition> A startWriteLock(RwLock lock, A acquisition) {
        return access(lock, acquisition, "startWriteLock").startWriteLock(lock, acquisition);
    }

    /**
     * Starts {@code acquisition} as a wait for {@code n} permits for {@code key}: exactly
     * {@link FairShareSemaphore#acquireThen(Object, long, Waker)} with the acquisition as its own
     * waker. Its {@code isGranted()}, {@code isClosed()}, {@code failure()} and {@code cancel()}
     * work as on the handle {@code acquireThen} returns; give the permits back with
     * {@link FairShareSemaphore#release(Object, long)}. A provisional grant is counted per key: until
     * {@code confirmGrant()} {@code heldPermits(key)} does not count it, and a
     * {@code release(key, n)} that could only pass by counting it waits for that decision.
     *
     * @param pool the fair share
     * @param key the key
     * @param n the number of permits
     * @param acquisition a new, never started acquisition
     * @param <K> the key type
     * @param <A> the acquisition's type
     * @return {@code acquisition}, now waiting or already settled
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range (nothing changes)
     * @throws NullPointerException if {@code pool}, {@code key} or {@code acquisition} is null
     * @throws IllegalStateException if {@code acquisition} was already started (nothing changes)
     * @throws dev.handoff.SemaphoreRejectedException if it would have to wait and a queue bound is
     *     reached (nothing changes; the acquisition may be started again)
     */
    public static <K, A extends Acquisition> A startAcquisition(
            FairShareSemaphore<K> pool, K key, long n, A acquisition) {
        return access(pool, acquisition, "startAcquisition").startAcquisition(pool, key, n, acquisition);
    }

    /**
     * The faces' start methods, implemented by the library's core package only; not for use.
     * {@link #install(Access)} accepts exactly one, from the core.
     */
    public interface Access {
        /**
         * See {@link Adapters#startAcquisition(Semaphore, long, Acquisition)}.
         *
         * @param semaphore the semaphore
         * @param n the number of permits
         * @param acquisition the acquisition
         * @param <A> its type
         * @return {@code acquisition}
         */
        <A extends Acquisition> A startAcquisition(Semaphore semaphore, long n, A acquisition);

        /**
         * See {@link Adapters#startAcquisitionUpTo(Semaphore, long, long, Acquisition)}.
         *
         * @param semaphore the semaphore
         * @param min the least permits
         * @param max the most permits
         * @param acquisition the acquisition
         * @param <A> its type
         * @return {@code acquisition}
         */
        <A extends Acquisition> A startAcquisitionUpTo(Semaphore semaphore, long min, long max, A acquisition);

        /**
         * See {@link Adapters#startLock(Mutex, Acquisition)}.
         *
         * @param mutex the mutex
         * @param acquisition the acquisition
         * @param <A> its type
         * @return {@code acquisition}
         */
        <A extends Acquisition> A startLock(Mutex mutex, A acquisition);

        /**
         * See {@link Adapters#startReadLock(RwLock, Acquisition)}.
         *
         * @param lock the lock
         * @param acquisition the acquisition
         * @param <A> its type
         * @return {@code acquisition}
         */
        <A extends Acquisition> A startReadLock(RwLock lock, A acquisition);

        /**
         * See {@link Adapters#startWriteLock(RwLock, Acquisition)}.
         *
         * @param lock the lock
         * @param acquisition the acquisition
         * @param <A> its type
         * @return {@code acquisition}
         */
        <A extends Acquisition> A startWriteLock(RwLock lock, A acquisition);

        /**
         * See {@link Adapters#startAcquisition(FairShareSemaphore, Object, long, Acquisition)}.
         *
         * @param pool the fair share
         * @param key the key
         * @param n the number of permits
         * @param acquisition the acquisition
         * @param <K> the key type
         * @param <A> its type
         * @return {@code acquisition}
         */
        <K, A extends Acquisition> A startAcquisition(FairShareSemaphore<K> pool, K key, long n, A acquisition);
    }

    /**
     * Called once by the core package as its {@link Acquisition} class initializes (before any
     * acquisition exists, so before any hook here can be called); not for use.
     *
     * @param core the core's implementation
     * @throws IllegalStateException if called again, or with anything but the core's implementation
     */
    public static void install(Access core) {
        if (access != null
                || core == null
                || core.getClass().getClassLoader() != Acquisition.class.getClassLoader()
                || !core.getClass().getName().equals("dev.handoff.SpiAccess")) {
            throw new IllegalStateException("Adapters.install: only the core installs its hooks, once");
        }
        access = core;
    }

    private static Access access(Object face, Acquisition acquisition, String call) {
        if (face == null) {
            throw new NullPointerException(call + "(null, ..): the face is null");
        }
        Access a = access;
        if (a == null) { // no acquisition was ever created, so this one is null: the face would say so
            throw new NullPointerException(call + "(.., null): the acquisition is null");
        }
        return a; // the face checks the rest, and names the call in its messages
    }
}
