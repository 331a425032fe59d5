// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.AbstractQueuedSynchronizer;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * The core's internal lock, and the quiet stamps observers read instead of taking it.
 *
 * <pre>
 * The lock
 * --------
 * CoreLock, a small exclusive AbstractQueuedSynchronizer (not reentrant: an adapter's claim()
 * that calls back is refused). Every critical section is short and bounded (a few links, a CAS,
 * the claims of adapters' nodes granted), so a thread that finds the lock held polls it, for at most
 * LOCK_SPIN_NANOS (microseconds, far below a scheduler time slice) and only while nobody is
 * parked on it, then parks. Parked threads wait in AQS's FIFO queue: each unlock unparks the one
 * parked longest, and a woken thread that loses the lock to a polling one keeps its place, so
 * nobody parked is overtaken by a thread that parked later. A holder that was preempted costs
 * the waiters a park, not a core: nobody yields or polls for a whole time slice. The one wait
 * under the lock, for a lock-free appender's link (pause), polls, yields a bounded number of
 * times and then parks for short periods, so a descheduled appender gets the core.
 * No synchronized anywhere: a virtual thread that parks here unmounts.
 *
 * - Observers never take the lock and never queue for it, and their wait is bounded. The lock's
 *   state is a stamp, odd while held, one more at every lock and unlock. An observer that needs fields the
 *   lock guards (queueLength(), queuedPermits(), heldPermits(), the state of a WAITING node) takes
 *   an even stamp, reads, and keeps what it read if the stamp is unchanged, else reads again; it
 *   never queues on the lock nor delays a holder. What it keeps then is what a reader under the
 *   lock would have seen at that instant (linearizable; the Lincheck tests check it): lock-free
 *   changes (a tail CAS with its counts set before, a word CAS) are single atomic writes. The
 *   wait for an even stamp is bounded (LOCK_SPINS polls, QUIET_YIELDS yields, then short parks up
 *   to QUIET_WAIT_NANOS, about a time slice, so that a descheduled holder gets the core rather
 *   than a spinning observer), and so are the reads again (OBSERVE_ATTEMPTS): a holder that stays inside longer (descheduled, or
 *   in an adapter's slow claim(); a user's Waker.claim() runs after the unlock) or a stream of sections overlapping every read make the
 *   observer answer with what it read while a section ran, kept in range (a length and a weight
 *   of at least 0, held between 0 and capacity + debt). Such an answer is a recent value, not
 *   always one that was current at a single instant. Without the bound, a claim() on A that reads
 *   B's queue length while a claim() on B reads A's would spin on two cores for good. Node states
 *   are written last, after the word and the queue, so a settled state read alone (isGranted(),
 *   cancel() returning false) comes with the word and queue it left; a WAITING state read during
 *   a section is the state before it. queueLength() is 0 while QUEUED is clear, else tail.seq -
 *   removedCount; both are O(1). availablePermits() and isClosed() read the word alone (during a
 *   claim window, once no holder is inside, within the same bound).
 * </pre>
 */
final class CoreLock extends AbstractQueuedSynchronizer {

    /**
     * Whether a thread that finds the internal lock held polls it before parking: not on one
     * processor, where the holder cannot run while we poll. Also the number of polls a lock holder
     * makes while it waits for a lock-free appender's link before it starts yielding (see pause).
     */
    static final int LOCK_SPINS = Runtime.getRuntime().availableProcessors() > 1 ? 1 << 9 : 0;

    /**
     * How long a thread that finds the internal lock held polls it before it parks. Every critical
     * section is short and bounded (tens of nanoseconds to a few microseconds: a few links, a CAS,
     * and the claims of the nodes granted), so a holder that is running lets go well within this;
     * one that was preempted comes back only after a scheduler time slice (milliseconds), which is
     * not worth burning a core for: the waiter parks, in FIFO order, and the unlock wakes it.
     */
    static final long LOCK_SPIN_NANOS = 20_000L;

    /**
     * The bound of an observer (see "Observers" above): how many times it yields
     * after its {@link #LOCK_SPINS} polls while a holder stays inside (then it parks briefly, up to
     * {@link #QUIET_WAIT_NANOS}), and how many reads it makes while sections keep overlapping them,
     * before it answers with what it read.
     */
    static final int QUIET_YIELDS = 16;

    static final int OBSERVE_ATTEMPTS = 64;

    /**
     * After its polls and yields, how long in all an observer waits for a holder to come out (in
     * parks of {@link #QUIET_PARK_NANOS}, so a descheduled holder gets the core) before it answers
     * with what it reads while that holder is inside. About one scheduler time slice.
     */
    static final long QUIET_WAIT_NANOS = 2_000_000L;

    private static final long QUIET_PARK_NANOS = 20_000L;

    private static final long serialVersionUID = 1L;

    /** Takes the lock (see the class comment); refuses re-entry. */
    void lock() {
        Thread me = Thread.currentThread();
        if (!tryTake()) {
            if (getExclusiveOwnerThread() == me) {
                throw new IllegalStateException("Waker.claim() must not call back into the semaphore");
            }
            if (!spin()) {
                acquire(1); // parks, in FIFO order, until the lock is ours (tryAcquire set the owner)
                return;
            }
        }
        setExclusiveOwnerThread(me);
    }

    /** One attempt: an even (free) stamp becomes odd (held). */
    private boolean tryTake() {
        int v = getState();
        return (v & 1) == 0 && compareAndSetState(v, v + 1);
    }

    /** Gives the lock back and unparks the first parked thread, if any. */
    void unlock() {
        release(1);
    }

    /** Whether {@code t} holds the lock; exact when {@code t} is the calling thread. */
    boolean heldBy(Thread t) {
        return getExclusiveOwnerThread() == t; // only t itself writes t there
    }

    /**
     * A stamp to read guarded fields by, without the lock: while a holder is inside, polls
     * ({@link #LOCK_SPINS} times), then yields ({@link #QUIET_YIELDS} times), then parks for
     * short periods, never queuing on the lock, for at most {@link #QUIET_WAIT_NANOS} in all;
     * returns the even stamp once the holder is out, or the odd stamp of a holder still inside
     * after that (see {@link #answered}).
     */
    int quietStamp() {
        long since = 0L;
        for (int spins = 0; ; spins++) {
            int v = getState();
            if ((v & 1) == 0) {
                return v;
            }
            if (spins < LOCK_SPINS) {
                Thread.onSpinWait();
            } else if (spins < LOCK_SPINS + QUIET_YIELDS) {
                Thread.yield();
            } else {
                long now = System.nanoTime();
                if (since == 0L) {
                    since = now;
                } else if (now - since >= QUIET_WAIT_NANOS) {
                    return v;
                }
                LockSupport.parkNanos(this, QUIET_PARK_NANOS);
            }
        }
    }

    /**
     * Whether no holder took the lock since {@link #quietStamp()} returned {@code stamp}: then the
     * guarded fields read in between are one consistent snapshot.
     */
    boolean unchangedSince(int stamp) {
        VarHandle.acquireFence(); // the reads before this one are not reordered after it
        return getState() == stamp;
    }

    /**
     * Whether an observer keeps what it read after {@code stamp} in its {@code attempt}-th read
     * (from 0): if no holder took the lock meanwhile (a consistent snapshot), or if it read while
     * a holder stayed inside past the bound of {@link #quietStamp()}, or after
     * {@link #OBSERVE_ATTEMPTS} reads that sections kept overlapping. The last two are the
     * bound on an observer's wait: a descheduled holder, a long claim() or a stream
     * of sections never keep it, and two claims that each observe the other's semaphore cannot
     * livelock. What it keeps then was read while a section ran (see "Observers" above).
     */
    boolean answered(int stamp, int attempt) {
        return unchangedSince(stamp) || (stamp & 1) != 0 || attempt >= OBSERVE_ATTEMPTS;
    }

    /**
     * An observer's read of guarded fields without the lock: {@code read} between two equal stamps
     * (see {@link #answered}), or at once inside a section of this thread (a claim asking, which
     * sees its own section).
     */
    long read(LongSupplier read) {
        if (heldBy(Thread.currentThread())) {
            return read.getAsLong();
        }
        for (int attempt = 0; ; attempt++) {
            int stamp = quietStamp();
            long v = read.getAsLong();
            if (answered(stamp, attempt)) {
                return v;
            }
        }
    }

    /**
     * Polls the held lock for up to {@link #LOCK_SPIN_NANOS} (the clock is read every 32 polls)
     * unless threads are already parked on it (then this one queues behind them at once, so a
     * thread that arrives later does not pass the parked ones); returns whether it took it.
     */
    private boolean spin() {
        if (LOCK_SPINS == 0) {
            return false;
        }
        long deadline = 0L;
        for (int i = 1; ; i++) {
            Thread.onSpinWait();
            if ((getState() & 1) == 0) {
                if (hasQueuedThreads()) {
                    return false;
                }
                if (tryTake()) {
                    return true;
                }
            }
            if ((i & 31) == 0) {
                long now = System.nanoTime();
                if (deadline == 0L) {
                    deadline = now + LOCK_SPIN_NANOS;
                } else if (now - deadline >= 0L) {
                    return false;
                }
            }
        }
    }

    @Override
    protected boolean tryAcquire(int ignored) {
        if (tryTake()) {
            setExclusiveOwnerThread(Thread.currentThread());
            return true;
        }
        return false;
    }

    @Override
    protected boolean tryRelease(int ignored) {
        setExclusiveOwnerThread(null);
        setState(getState() + 1); // volatile: what the holder wrote is seen with the even stamp
        return true;
    }

    @Override
    protected boolean isHeldExclusively() {
        return getExclusiveOwnerThread() == Thread.currentThread();
    }
}
