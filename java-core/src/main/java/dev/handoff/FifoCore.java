// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The weighted FIFO core of every primitive: a strictly FIFO semaphore with direct handoff.
 * {@link Semaphore}, {@link Mutex}, {@link RwLock} and {@link FairShareSemaphore} are faces over it;
 * they validate arguments and name the call in messages, this class assumes valid arguments. This
 * class holds the waits the faces start (blocking, future, callback, up-to) and the observers;
 * the algorithm lives in the layers it extends, each with its own notes: {@link StateWord}
 * (the word), {@link WaitQueue} (the queue), {@link ProvisionalGrants}, {@link CapacityControl}
 * and {@link HandoffCore} (the handoff), with {@link CoreLock}, {@link WakeRun} and
 * {@link ListenerCalls} beside them.
 *
 * <pre>
 * Overview
 * --------
 * Free permits live in one atomic state word. A waiting acquisition is an intrusive node
 * (Acquisition) in a doubly linked FIFO queue guarded by an internal lock. The fast paths —
 * tryAcquire, and release while nobody waits — are one CAS on the state word and never lock.
 * Everything that touches the queue runs under the lock, but for one step: a node that joins a
 * queue that already has nodes is appended by a CAS on the tail (see "Appending without the
 * lock"). Permits released while someone waits
 * never become free: release hands them straight to the head of the queue (direct handoff),
 * partially if the head needs more than there is (partial assignment), then to the next heads
 * that fit, in order, and stops at the first that does not fit. Only the surplus left when the
 * queue empties becomes free. This is blitz-io's counting semaphore (after Tokio's
 * batch_semaphore), with one change: release does not lock when nobody waits.
 *
 * Invariants (hold whenever the lock is free)
 *   I1  QUEUED == (head != null).
 *   I2  QUEUED implies free == 0.  (Permits never float while someone waits.)
 *   I3  only the head may have permits assigned: headAssigned, which is < the head's minimum,
 *       and 0 while the queue is empty. (Kept here, not in the node: a node is 8 bytes smaller.)
 *   I4  capacity + debt == free + held-by-callers + headAssigned.
 *   I5  debt > 0 implies free == 0 and GATED.  (Returned permits pay the debt first.)
 *   I6  wideResized implies GATED.              (See the stamp.)
 *   I7  the queue length is lastNode().seq - removedCount, and the queued weight is
 *       queuedHi * 2^32 + lastNode().cumLo - removedLo (see "Queue counters" in WaitQueue); 0
 *       for an empty queue.
 *
 * Waiter states (Acquisition.state, written under the lock)
 * ---------------------------------------------------------
 *                    claim() true, all permits handed           (woken: wake())
 *              +------------------------------------------> GRANTED
 *              |
 *   WAITING ---+---- close() -----------------------------> CLOSED     (woken: wake())
 *   (queued)   |
 *              +---- claim() (or the face's onGrant) throws -> FAILED     (woken: wake())
 *              |
 *              +---- cancel(), or claim() false ----------> CANCELLED  (never woken)
 *              |
 *              +---- a grant to a user's Waker -----------> CLAIMING ---> GRANTED, or
 *                    (provisional; its claim() runs after unlock)       CANCELLED/FAILED (undone)
 * An acquisition granted or closed inside acquire() goes from new straight to GRANTED, CLOSED,
 * FAILED, CANCELLED or CLAIMING without being queued. Every transition from WAITING happens once,
 * under the lock; so exactly one of grant, close and cancel wins, and cancel() of a node that no
 * longer waits (CLAIMING included) changes nothing. CLAIMING is left once, by the thread that runs
 * its claim: to GRANTED without the lock, or to CANCELLED or FAILED under it (see "Claims after
 * the lock" in HandoffCore).
 *
 * Memory ordering
 * ---------------
 * The state word is accessed with volatile CAS/reads, so a release that adds to free
 * happens-before a tryAcquire that takes those permits. A handoff writes the node's volatile
 * state under the lock; the woken party reads that state (isGranted, the blocking face's park
 * loop) or is resumed by the releasing thread itself after the write (wake() runs after the
 * state write in program order), so a release happens-before the completion of every
 * acquisition it grants.
 *
 * References
 * ----------
 * - blitz-io and Volt counting semaphore (lock-before-CAS, direct handoff).
 * - Tokio, tokio/src/sync/batch_semaphore.rs (partial assignment, closed flag in the word).
 * - golang.org/x/sync/semaphore.Weighted (the weighted FIFO contract).
 * - D. Lea, java.util.concurrent.locks.AbstractQueuedSynchronizer (park/unpark protocol).
 * - Herlihy and Shavit, The Art of Multiprocessor Programming, ch. 8.
 * </pre>
 */
final class FifoCore extends HandoffCore {

    /**
     * How many times a blocked thread at the head of the queue polls its node before parking. On
     * a multi-core machine a handoff often arrives within a few microseconds; polling saves the
     * park/unpark round trip that makes fair j.u.c. semaphores slow. Threads behind the head park
     * at once. No spinning on a single core.
     */
    static final int SPINS = Runtime.getRuntime().availableProcessors() > 1 ? 1 << 10 : 0;

    /** A timed wait spins only while more than this is left before its deadline. */
    private static final long SPIN_MIN_REMAINING_NANOS = 50_000L;

    FifoCore(long capacity) {
        this(capacity, Long.MAX_VALUE, Integer.MAX_VALUE, null, null);
    }

    FifoCore(long capacity, Object face) {
        this(capacity, Long.MAX_VALUE, Integer.MAX_VALUE, null, face);
    }

    FifoCore(long capacity, long maxQueuedPermits, int maxQueueLength, WaitListener listener, Object face) {
        this(capacity, maxQueuedPermits, maxQueueLength, listener, face, null);
    }

    /** A core with a scheduler in front of it (see "A scheduler in front" in HandoffCore). */
    FifoCore(long capacity, Object face, Front front) {
        this(capacity, Long.MAX_VALUE, Integer.MAX_VALUE, null, face, front);
    }

    private FifoCore(
            long capacity, long maxQueuedPermits, int maxQueueLength, WaitListener listener, Object face, Front front) {
        super(capacity, maxQueuedPermits, maxQueueLength, listener, face, front);
    }

    // ------------------------------------------------------------------ observers

    long availablePermits() {
        long s = word();
        if ((s & (WINDOW | GATED)) != 0 && !heldByCurrentThread()) {
            if ((s & WINDOW) != 0) {
                // Permits in transit: read the word while nobody holds the lock (WINDOW is set and
                // cleared within one hold of it, so it is clear then), and see the claim's outcome.
                lock.quietStamp();
                s = word();
            }
            if (decidesAfterTransit(s)) {
                s = afterTransit();
            }
        }
        return free(s);
    }

    /**
     * The queue length, consistent with the state word: 0 while QUEUED is clear; otherwise read
     * from the counters without the lock (see "Observers" in CoreLock), so that a queue being
     * filled or drained is never seen half done. O(1).
     */
    int queueLength() {
        if ((word() & QUEUED) == 0) {
            return 0;
        }
        // (from a claim() under the lock: the caller sees its own section)
        return (int) lock.read(() -> (word() & QUEUED) == 0 ? 0 : countedLength());
    }

    /**
     * The state of {@code a} for a lock-free observer. States are written last, so a settled state
     * read alone comes with the word and the queue it left; a WAITING one is read again between two
     * quiet stamps of the lock (see "Observers" in CoreLock), so that a settlement in progress is
     * seen whole. Never takes the lock.
     */
    int settledState(Acquisition a) {
        int st = a.state;
        if (st == Acquisition.CLAIMING) {
            st = awaitClaim(a);
        }
        if (st != Acquisition.WAITING) {
            return st;
        }
        return (int) lock.read(() -> a.state);
    }

    /**
     * The state of {@code a} once its waker's claim has answered (see "Claims after the lock" in
     * HandoffCore), so that isGranted() after a cancel() that lost to the grant is exact; at once
     * (CLAIMING, read as not granted) on the thread running that claim. Waits as
     * {@link ShortWait} does: the claim is a short step on another thread.
     */
    static int awaitClaim(Acquisition a) {
        if (WakeRun.current().claiming == a) {
            return Acquisition.CLAIMING;
        }
        int st;
        for (int waits = 1; (st = a.state) == Acquisition.CLAIMING; waits++) {
            ShortWait.pause(a, waits, 10_000L);
        }
        return st;
    }

    boolean isClosed() {
        return (word() & CLOSED) != 0;
    }

    /** Permits held by callers (capacity - free - handed to a waiting head). A snapshot. */
    long heldPermits() {
        long s = word();
        if ((s & (QUEUED | GATED)) == 0) {
            long c = capacity; // after the word, checked again: see release
            if (word() == s) {
                return c - free(s);
            }
        }
        return lock.read(
                () -> { // without the lock: see "Observers" in CoreLock
                    long c = capacity;
                    long owed = debt;
                    long held = c + owed - free(word()) - headAssigned;
                    return Math.max(0L, Math.min(held, c + owed)); // in range even if read while a section runs
                });
    }

    // ------------------------------------------------------------------ faces

    /** The callback face, arguments valid; {@code onGrant} (nullable) as for {@link #acquireAsync}. */
    Acquisition acquire(long n, Waker waker, Runnable onGrant, String call) {
        return enqueue(new CallbackAcquisition(this, n, onGrant, waker), call);
    }

    /**
     * The callback face of a lock ({@code Mutex.lockThen}, {@code RwLock.readLockThen} and
     * {@code writeLockThen}): checks the waker, then acquires the lock's weight {@code n} as
     * {@link #acquire(long, Waker, Runnable, String)} does; {@code method} names the public method.
     *
     * @throws NullPointerException if {@code waker} is null
     */
    Acquisition lockThen(long n, @Nullable Waker waker, @Nullable Runnable onGrant, String method) {
        if (waker == null) {
            throw new NullPointerException(method + "(null): the waker is null");
        }
        return acquire(n, waker, onGrant, method + "(waker)");
    }

    /**
     * A lock's start of a subclass node ({@code Adapters.startLock}, {@code startReadLock},
     * {@code startWriteLock}): checks the node, then starts it for the lock's weight {@code n} as
     * {@link #start(Acquisition, long, Runnable, String)} does.
     *
     * @throws NullPointerException if {@code a} is null
     */
    <A extends Acquisition> A startLock(@Nullable A a, long n, @Nullable Runnable onGrant, String method) {
        if (a == null) {
            throw new NullPointerException(method + "(null): the acquisition is null");
        }
        return start(a, n, onGrant, method + "()");
    }

    /**
     * A lock's {@code with...LockAsync}: checks {@code body}, then takes the lock's weight {@code n}
     * as {@link #acquireAsync} does and runs {@code body} holding it, {@code unlock} once its stage
     * completes (see {@link ScopedAsync#run}).
     *
     * @throws NullPointerException if {@code body} is null
     */
    <T> CompletableFuture<T> withLockAsync(
            long n,
            @Nullable Supplier<? extends CompletionStage<T>> body,
            String method,
            @Nullable Runnable onGrant,
            PermitHandles.GiveBack back,
            Runnable unlock) {
        if (body == null) {
            throw new NullPointerException(method + "(null): the body is null");
        }
        String call = method + "()";
        return ScopedAsync.run(acquireAsync(n, call, onGrant, back), unlock, body, call);
    }

    /**
     * Starts a subclass node, arguments valid: binds it (once only; {@code call} names the call
     * in the refusal) and acquires as the callback face does.
     */
    <A extends Acquisition> A start(A a, long n, Runnable onGrant, String call) {
        return start(a, n, n, onGrant, call);
    }

    /**
     * Starts a subclass node for {@code min} to {@code max} permits ({@code min == max}: exactly
     * that many), arguments valid; as {@link #start(Acquisition, long, Runnable, String)}.
     */
    <A extends Acquisition> A start(A a, long min, long max, Runnable onGrant, String call) {
        a.bind(this, min, max, onGrant, call);
        try {
            return enqueue(a, call);
        } catch (RuntimeException | Error refused) { // shed, or too heavy after a shrink: nothing changed
            a.unbind(); // (a cancel waiting for this start then answers false)
            throw refused;
        }
    }

    /**
     * tryAcquire, then the face's bookkeeping; if that throws, the permits are given back before
     * the exception propagates, so nothing is held.
     */
    boolean tryAcquire(long n, Runnable onGrant) {
        if (!tryAcquire(n)) {
            return false;
        }
        if (onGrant != null) {
            try {
                onGrant.run();
            } catch (Throwable t) {
                if (n > 0) {
                    release(n);
                }
                throw t;
            }
        }
        return true;
    }

    /**
     * The future face, arguments valid. {@code call} names the call in a closed failure;
     * {@code onGrant} (nullable) runs at the grant, before the future completes — under the lock
     * if the grant is a handoff, so it must be a short step such as setting a flag.
     */
    CompletableFuture<Permits> acquireAsync(long n, String call, Runnable onGrant, PermitHandles.GiveBack back) {
        try {
            if (tryAcquire(n, onGrant)) {
                return new PermitHandles.Granted(n, back); // one object: the future is its own value
            }
        } catch (Throwable failedGrant) { // nothing is held; the future reports it, as on a handoff
            return CompletableFuture.failedFuture(failedGrant);
        }
        return enqueueFuture(new FutureAcquisition<>(this, n, n, call, onGrant, back), call);
    }

    /**
     * {@link #acquireAsync(long, String, Runnable, PermitHandles.GiveBack)} of a handle the caller
     * keeps, watched by the face's leak detection: {@code leaks} null (off) costs nothing; otherwise
     * the handle is tracked (see {@link LeakDetection}), with the call as its acquisition site.
     */
    CompletableFuture<Permits> acquireAsync(
            long n, String call, PermitHandles.GiveBack back, @Nullable LeakDetection leaks) {
        if (leaks == null) {
            return acquireAsync(n, call, null, back);
        }
        PermitLeaks.Tracked t = PermitLeaks.track(leaks, back, face, CoreMessages.describe(call, n));
        return t.watch(acquireAsync(n, call, null, t));
    }

    /** The blocking form of {@link #acquireAsync(long, String, PermitHandles.GiveBack, LeakDetection)}. */
    Permits acquireBlocking(long n, String call, PermitHandles.GiveBack back, @Nullable LeakDetection leaks)
            throws InterruptedException {
        if (leaks == null) {
            return acquireBlocking(n, call, null, back);
        }
        PermitLeaks.Tracked t = PermitLeaks.track(leaks, back, face, CoreMessages.describe(call, n));
        return t.watch(acquireBlocking(n, call, null, t));
    }

    /** The up-to form of {@link #acquireAsync(long, String, PermitHandles.GiveBack, LeakDetection)}. */
    CompletableFuture<Permits> acquireUpToAsync(
            long min, long max, String call, PermitHandles.GiveBack back, @Nullable LeakDetection leaks) {
        if (leaks == null) {
            return acquireUpToAsync(min, max, call, back);
        }
        PermitLeaks.Tracked t = PermitLeaks.track(leaks, back, face, call);
        return t.watch(acquireUpToAsync(min, max, call, t));
    }

    /** The up-to form of {@link #acquireBlocking(long, String, PermitHandles.GiveBack, LeakDetection)}. */
    Permits acquireUpToBlocking(
            long min, long max, String call, PermitHandles.GiveBack back, @Nullable LeakDetection leaks)
            throws InterruptedException {
        if (leaks == null) {
            return acquireUpToBlocking(min, max, call, back);
        }
        PermitLeaks.Tracked t = PermitLeaks.track(leaks, back, face, call);
        return t.watch(acquireUpToBlocking(min, max, call, t));
    }

    /** Queues a future's node; a shed request gets a failed future (argument errors are thrown). */
    private <T> CompletableFuture<T> enqueueFuture(FutureAcquisition<T> f, String call) {
        try {
            enqueue(f.node, call);
        } catch (SemaphoreRejectedException shed) {
            return CompletableFuture.failedFuture(shed);
        }
        return f;
    }

    /** The up-to future face, arguments valid ({@code 1 <= min <= max}, {@code min <= capacity}). */
    CompletableFuture<Permits> acquireUpToAsync(long min, long max, String call, PermitHandles.GiveBack back) {
        long got = tryAcquireRange(min, max);
        if (got > 0) {
            return new PermitHandles.Granted(got, back);
        }
        return enqueueFuture(new FutureAcquisition<>(this, min, max, call, null, back), call);
    }

    /** The up-to blocking face, arguments valid; the handle's permits() is the number taken. */
    Permits acquireUpToBlocking(long min, long max, String call, PermitHandles.GiveBack back)
            throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException(call + ": interrupted before waiting");
        }
        long got = tryAcquireRange(min, max);
        if (got > 0) {
            return new PermitHandles.Held(got, back);
        }
        ParkingAcquisition a = enqueue(new ParkingAcquisition(this, min, max, null, back), call);
        await(a, false, 0L, call);
        return a;
    }

    /**
     * The timed future face, arguments valid: {@code true} once granted, {@code false} on timeout
     * with nothing held (a grant that wins against the timer counts); fails on close. The timer is
     * the JDK's (orTimeout), cancelled and dropped as soon as the wait settles.
     */
    CompletableFuture<Boolean> tryAcquireAsync(long n, long nanos, String call, Runnable onGrant) {
        try {
            if (tryAcquire(n, onGrant)) {
                return CompletableFuture.completedFuture(Boolean.TRUE);
            }
        } catch (Throwable failedGrant) { // nothing is held; the future reports it, as on a handoff
            return CompletableFuture.failedFuture(failedGrant);
        }
        if (isClosed()) {
            return CompletableFuture.failedFuture(CoreMessages.closedException(call));
        }
        if (nanos <= 0) {
            return CompletableFuture.completedFuture(Boolean.FALSE);
        }
        // A shed request's failed future maps to the same failure (no timer: it is already done).
        return TimedAcquisition.of(
                enqueueFuture(new FutureAcquisition<>(this, n, n, call, onGrant, null), call), nanos);
    }

    /**
     * Takes between {@code min} and {@code max} permits ({@code 0 <= min <= max}) if nobody waits,
     * not closed, and at least {@code min} are free: as many as are free, up to {@code max}.
     * Returns how many, or 0. While GATED is set (a claim window, debt, a resize) and fewer than
     * {@code max} are free, it decides under the lock, so permits in transit never shrink it.
     */
    long tryAcquireRange(long min, long max) {
        long s = word();
        long waitedSince = 0L;
        for (; ; ) {
            if ((s & (QUEUED | CLOSED)) != 0) {
                return 0;
            }
            long free = free(s);
            if ((s & WINDOW) != 0 && free < max && !heldByCurrentThread()) {
                return takeUnderLock(min, max);
            }
            if (free < max && decidesAfterTransit(s) && !heldByCurrentThread()) {
                // A grant in transit may be undone and give more (as in tryAcquire): see its
                // outcome first, within the bound of a release's wait.
                waitedSince = waitedSince == 0L ? System.nanoTime() | 1L : waitedSince;
                long settled = settledWithinBound(s, waitedSince);
                if (settled != s) {
                    s = settled;
                    continue;
                }
            }
            long take = Math.min(free, max);
            if (free < min || take == 0) {
                return 0;
            }
            long witness = exchangeWord(s, s - (take << SHIFT));
            if (witness == s) {
                return take;
            }
            s = witness;
        }
    }

    /**
     * The sum of the minimums of the waiting acquisitions: 0 while nobody waits, else read from the
     * counters without the lock, as {@link #queueLength()} does. O(1).
     */
    long queuedPermits() {
        if ((word() & QUEUED) == 0) {
            return 0;
        }
        return lock.read(() -> (word() & QUEUED) == 0 ? 0L : countedPermits());
    }

    /**
     * The blocking face, arguments valid. Returns normally once granted; throws
     * InterruptedException (nothing held) or SemaphoreClosedException. {@code onGrant}
     * (nullable) runs at the grant, as for {@link #acquireAsync}.
     */
    Permits acquireBlocking(long n, String call, Runnable onGrant, PermitHandles.GiveBack back)
            throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException(CoreMessages.describe(call, n) + ": interrupted before waiting");
        }
        if (tryAcquire(n, onGrant)) {
            return new PermitHandles.Held(n, back);
        }
        ParkingAcquisition a = enqueue(new ParkingAcquisition(this, n, n, onGrant, back), call);
        await(a, false, 0L, call);
        return a;
    }

    /** The timed blocking face, arguments valid; {@code nanos <= 0} does not wait. */
    boolean tryAcquire(long n, long nanos, String call, Runnable onGrant) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException(call + ": interrupted before waiting");
        }
        if (tryAcquire(n, onGrant)) {
            return true;
        }
        if (nanos <= 0) {
            if (isClosed()) {
                throw CoreMessages.closedException(call);
            }
            return false;
        }
        return await(enqueue(new ParkingAcquisition(this, n, n, onGrant, null), call), true, nanos, call);
    }

    /**
     * Parks until the node settles; spins a little first. Cancels on interrupt or timeout. The
     * node's wake() unparks this thread (a ParkingAcquisition, or a fair-share node of a blocking call).
     */
    boolean await(Acquisition a, boolean timed, long nanos, String call) throws InterruptedException {
        long deadline = timed ? System.nanoTime() + nanos : 0L;
        boolean interrupted = false;
        int spins = SPINS;
        while (a.state == Acquisition.WAITING) {
            // Spin only while at the head of the queue: the head is the next to be granted, the
            // others would only take CPU from the permit holders. (A racy read of a lock-guarded
            // link: it only steers the spinning, the state read above decides.)
            if (spins > 0
                    && a.prev == null
                    && !Thread.currentThread().isInterrupted()
                    && (!timed || deadline - System.nanoTime() > SPIN_MIN_REMAINING_NANOS)) {
                spins--;
                Thread.onSpinWait();
                continue;
            }
            if (timed) {
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0L) {
                    if (cancel(a, null, true)) {
                        return false;
                    }
                    break; // the grant or close won the race
                }
                LockSupport.parkNanos(this, remaining);
            } else {
                LockSupport.park(this);
            }
            if (Thread.interrupted()) {
                if (cancel(a, null, false)) {
                    throw new InterruptedException(
                            CoreMessages.describe(call, a.permits) + ": interrupted while waiting");
                }
                interrupted = true; // the grant or close won: keep the interrupt for the caller
                break;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        int st = a.state;
        if (st == Acquisition.CLOSED) {
            throw CoreMessages.closedException(CoreMessages.describe(call, a.permits));
        }
        if (st == Acquisition.FAILED) {
            throw CoreMessages.failedGrant(CoreMessages.describe(call, a.permits), a.failureCause());
        }
        return true;
    }
}
