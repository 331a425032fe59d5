// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * A fair read-write lock on the FIFO semaphore core: many readers or one writer, served strictly
 * in arrival order, so writers are never starved by a stream of readers.
 *
 * <p>It is a semaphore of {@code maxReaders} permits: a read lock takes one, a write lock takes all
 * of them. Because the queue is FIFO and the head is served first (partially, if need be), a
 * waiting writer blocks the readers that arrive after it, even while read permits are free; it
 * collects the permits of the readers ahead of it as they leave. {@link #downgrade()} turns a
 * write lock into a read lock without letting another writer in between.
 *
 * <pre>{@code
 * RwLock lock = new RwLock();
 *
 * String get(String key) throws InterruptedException {
 *     lock.readLockBlocking();
 *     try { return map.get(key); } finally { lock.readUnlock(); }
 * }
 *
 * void put(String key, String value) throws InterruptedException {
 *     lock.writeLockBlocking();
 *     try { map.put(key, value); } finally { lock.writeUnlock(); }
 * }
 * }</pre>
 *
 * <p>Not reentrant and not owned by a thread (asynchronous code may unlock from another thread).
 * Misuse such as {@link #readUnlock()} while write-locked, or {@link #writeUnlock()} while not
 * write-locked, throws {@link IllegalStateException} and changes nothing. The write-locked flag is
 * set at the writer's grant, before any waker runs, and cleared by one compare-and-set, so of two
 * racing {@code writeUnlock()} calls exactly one succeeds. Misuse that races with the operation
 * it contradicts (a {@code readUnlock()} by a thread holding nothing, while the writer downgrades)
 * is not always detected.
 *
 * <p>Memory consistency: actions before {@link #writeUnlock()} happen-before actions after any
 * later read or write lock is granted; actions before {@link #readUnlock()} happen-before actions
 * after a later write lock is granted.
 */
public final class RwLock {

    /** The number of concurrent readers allowed by {@link #RwLock()}: 2<sup>30</sup>. */
    public static final int DEFAULT_MAX_READERS = 1 << 30;

    private final BatchSemaphore core;
    private final int maxReaders;

    /**
     * Whether a writer holds the lock. Set at the writer's grant — under the core's lock for a
     * handoff (see markWriteLocked), right after the CAS for an immediate grant — and cleared by
     * one CAS in writeUnlock/downgrade, so two racing unlocks cannot both succeed.
     */
    private volatile boolean writeLocked;

    /** Runs at a writer's grant, before anyone is woken: a volatile write. */
    private final BatchSemaphore.GrantUndo markWriteLocked = new BatchSemaphore.GrantUndo() {
        @Override
        public void run() {
            WRITE_GRANTS.getAndAdd(RwLock.this, 1);
            writeLocked = true;
        }

        @Override
        public void undo() { // a provisional write grant undone (see Acquisition.undoGrant)
            writeLocked = false;
            WRITE_GRANTS.getAndAdd(RwLock.this, 1);
        }
    };

    /**
     * Counts the writers' grants and undone grants, so that an unlock that cleared the flag and
     * then found the permits not held restores the flag only if no grant was undone meanwhile (a
     * misused unlock racing a cancelled writer's provisional grant, see Acquisition.undoGrant).
     */
    private volatile int writeGrants;

    /** Creates a lock that admits up to {@link #DEFAULT_MAX_READERS} readers at once. */
    public RwLock() {
        this(DEFAULT_MAX_READERS);
    }

    /**
     * Creates a lock that admits up to {@code maxReaders} readers at once; a further reader waits
     * (in FIFO order) until one leaves.
     *
     * @param maxReaders the read permits, at least 1
     * @throws IllegalArgumentException if {@code maxReaders < 1}
     */
    public RwLock(int maxReaders) {
        this(maxReaders, null, false);
    }

    /**
     * Creates a lock that admits up to {@code maxReaders} readers at once and tells
     * {@code listener} of its waits, as a semaphore's
     * {@link Semaphore.Builder#waitListener(WaitListener)} does: a reader waits for weight 1, a
     * writer for weight {@code maxReaders} (the whole lock). A lock taken at once calls nothing.
     *
     * <pre>{@code
     * RwLock cache = new RwLock(64, new JfrWaitListener("cache"));   // handoff-jfr
     * }</pre>
     *
     * @param maxReaders the read permits, at least 1
     * @param listener the listener, see {@link WaitListener} for the threads it runs on
     * @throws IllegalArgumentException if {@code maxReaders < 1}
     * @throws NullPointerException if {@code listener} is null
     */
    public RwLock(int maxReaders, WaitListener listener) {
        this(maxReaders, listener, true);
    }

    /** Checks the arguments (the listener first, if one was asked for), then creates the lock. */
    private RwLock(int maxReaders, WaitListener listener, boolean listened) {
        if (listened && listener == null) {
            throw new NullPointerException("new RwLock(" + maxReaders + ", null): the listener is null");
        }
        if (maxReaders < 1) {
            throw new IllegalArgumentException("new RwLock(" + maxReaders + (listened ? ", listener" : "")
                    + "): maxReaders must be at least 1");
        }
        this.maxReaders = maxReaders;
        this.core = new BatchSemaphore(maxReaders, Long.MAX_VALUE, Integer.MAX_VALUE, listener, this);
    }

    /**
     * Returns the most readers that may hold the lock at once.
     *
     * @return {@code maxReaders}
     */
    public int maxReaders() {
        return maxReaders;
    }

    // ------------------------------------------------------------------ read

    /**
     * Takes a read lock at once if nobody waits and no writer holds the lock and fewer than
     * {@code maxReaders} readers hold it; never waits.
     *
     * @return {@code true} if read-locked, to be followed by {@link #readUnlock()}
     */
    public boolean tryReadLock() {
        return core.tryAcquire(1);
    }

    /**
     * Takes a read lock, parking for at most {@code timeout}.
     *
     * @param timeout the longest wait; zero or negative does not wait
     * @return {@code true} if read-locked
     * @throws InterruptedException if interrupted before the grant (nothing is held)
     * @throws NullPointerException if {@code timeout} is null
     */
    public boolean tryReadLock(Duration timeout) throws InterruptedException {
        return core.tryAcquire(1, nanos("tryReadLock", timeout), "tryReadLock(" + timeout + ")", null);
    }

    /**
     * The callback primitive for readers: see {@link Semaphore#acquire(long, Waker)}.
     *
     * @param waker what to run once the read lock is held
     * @return the handle of the wait
     * @throws NullPointerException if {@code waker} is null
     */
    public Acquisition readLock(Waker waker) {
        if (waker == null) {
            throw new NullPointerException("readLock(null): the waker is null");
        }
        return core.acquire(1, waker, null, "readLock(waker)");
    }

    /**
     * Starts {@code acquisition}, a subclass of {@link Acquisition} that is its own waker, as a
     * wait for a read lock: exactly {@link #readLock(Waker)} with the acquisition's {@code claim()} and
     * {@code wake()} in place of a waker's; see {@link Semaphore#startAcquisition(long, Acquisition)}.
     *
     * @param acquisition a new, never started acquisition
     * @param <A> the acquisition's type
     * @return {@code acquisition}, now waiting or already settled
     * @throws NullPointerException if {@code acquisition} is null
     * @throws IllegalStateException if {@code acquisition} was already started (nothing changes)
     */
    public <A extends Acquisition> A startReadLock(A acquisition) {
        if (acquisition == null) {
            throw new NullPointerException("startReadLock(null): the acquisition is null");
        }
        return core.start(acquisition, 1, null, "startReadLock()");
    }

    /**
     * Runs {@code body} holding a read lock and read-unlocks when the stage it returns completes, however it
     * completes: the asynchronous {@code try/finally}; see
     * {@link Semaphore#withPermitsAsync(long, java.util.function.Supplier)} for the rules (released
     * exactly once iff granted; a failed acquisition fails the result and releases nothing;
     * cancelling the result before the grant withdraws the wait).
     *
     * <pre>{@code
     * CompletableFuture<Page> page = lock.withReadLockAsync(() -> index.lookupAsync(query));
     * }</pre>
     *
     * @param body the work to run holding the lock; returns the stage whose completion unlocks
     * @param <T> the result type
     * @return a future completed with the stage's result, or failed with its, {@code body}'s or the
     *     acquisition's exception
     * @throws NullPointerException if {@code body} is null
     */
    public <T> CompletableFuture<T> withReadLockAsync(Supplier<? extends CompletionStage<T>> body) {
        if (body == null) {
            throw new NullPointerException("withReadLockAsync(null): the body is null");
        }
        return ScopedAsync.run(core.acquireAsync(1, "withReadLockAsync()", null), this::readUnlock, body,
                "withReadLockAsync()");
    }

    /**
     * Takes a read lock, returning a future completed once it is held. A cancelled future never
     * holds the lock; see {@link Semaphore#acquireAsync(long)}.
     *
     * @return a future completed once this caller holds a read lock
     */
    public CompletableFuture<Void> readLockAsync() {
        return core.acquireAsync(1, "readLockAsync()", null);
    }

    /**
     * Takes a read lock, parking the calling thread (safe on virtual threads).
     *
     * @throws InterruptedException if interrupted before the grant (nothing is held); if the grant
     *     won the race, returns normally with the interrupt flag set
     */
    public void readLockBlocking() throws InterruptedException {
        core.acquireBlocking(1, "readLockBlocking()", null);
    }

    /**
     * Releases a read lock; a waiting writer at the head collects it.
     *
     * @throws IllegalStateException if the lock is write-locked or not read-locked (nothing changes)
     */
    public void readUnlock() {
        readUnlock(null, "readUnlock()");
    }

    /**
     * Releases a read lock like {@link #readUnlock()}, but the wakers of the waiters it lets in
     * run on {@code wakeExecutor}, not on this thread. The lock is handed over before this method
     * returns; only the {@code wake()} calls move (see {@link Semaphore#release(long, Executor)}).
     * If the executor refuses the task, the wakers run on this thread.
     *
     * @param wakeExecutor where the wake-ups caused by this unlock run
     * @throws NullPointerException if {@code wakeExecutor} is null (nothing changes)
     * @throws IllegalStateException if the lock is write-locked or not read-locked (nothing changes)
     */
    public void readUnlock(Executor wakeExecutor) {
        if (wakeExecutor == null) {
            throw new NullPointerException("readUnlock(null): the executor is null");
        }
        readUnlock(wakeExecutor, "readUnlock(executor)");
    }

    private void readUnlock(Executor wakes, String call) {
        if (writeLocked) {
            throw new IllegalStateException(call + ": the lock is write-locked, not read-locked");
        }
        if (core.release(1, wakes) >= 0) {
            throw new IllegalStateException(call + ": the lock is not read-locked");
        }
    }

    // ------------------------------------------------------------------ write

    /**
     * Takes the write lock at once if nobody holds the lock and nobody waits; never waits.
     *
     * @return {@code true} if write-locked, to be followed by {@link #writeUnlock()}
     */
    public boolean tryWriteLock() {
        return core.tryAcquire(maxReaders, markWriteLocked);
    }

    /**
     * Takes the write lock, parking for at most {@code timeout}.
     *
     * @param timeout the longest wait; zero or negative does not wait
     * @return {@code true} if write-locked
     * @throws InterruptedException if interrupted before the grant (nothing is held)
     * @throws NullPointerException if {@code timeout} is null
     */
    public boolean tryWriteLock(Duration timeout) throws InterruptedException {
        return core.tryAcquire(maxReaders, nanos("tryWriteLock", timeout), "tryWriteLock(" + timeout + ")",
                markWriteLocked);
    }

    /**
     * The callback primitive for writers: see {@link Semaphore#acquire(long, Waker)}. The lock
     * counts as write-locked from the grant on, before the waker runs.
     *
     * @param waker what to run once the write lock is held
     * @return the handle of the wait
     * @throws NullPointerException if {@code waker} is null
     */
    public Acquisition writeLock(Waker waker) {
        if (waker == null) {
            throw new NullPointerException("writeLock(null): the waker is null");
        }
        return core.acquire(maxReaders, waker, markWriteLocked, "writeLock(waker)");
    }

    /**
     * Starts {@code acquisition}, a subclass of {@link Acquisition} that is its own waker, as a
     * wait for the write lock: exactly {@link #writeLock(Waker)} with the acquisition's {@code claim()} and
     * {@code wake()} in place of a waker's; see {@link Semaphore#startAcquisition(long, Acquisition)}.
     *
     * @param acquisition a new, never started acquisition
     * @param <A> the acquisition's type
     * @return {@code acquisition}, now waiting or already settled
     * @throws NullPointerException if {@code acquisition} is null
     * @throws IllegalStateException if {@code acquisition} was already started (nothing changes)
     */
    public <A extends Acquisition> A startWriteLock(A acquisition) {
        if (acquisition == null) {
            throw new NullPointerException("startWriteLock(null): the acquisition is null");
        }
        return core.start(acquisition, maxReaders, markWriteLocked, "startWriteLock()");
    }

    /**
     * Runs {@code body} holding the write lock and write-unlocks when the stage it returns completes, however it
     * completes: the asynchronous {@code try/finally}; see
     * {@link Semaphore#withPermitsAsync(long, java.util.function.Supplier)} for the rules (released
     * exactly once iff granted; a failed acquisition fails the result and releases nothing;
     * cancelling the result before the grant withdraws the wait).
     *
     * <pre>{@code
     * CompletableFuture<Void> rebuilt = lock.withWriteLockAsync(() -> index.rebuildAsync(changes));
     * }</pre>
     *
     * @param body the work to run holding the lock; returns the stage whose completion unlocks
     * @param <T> the result type
     * @return a future completed with the stage's result, or failed with its, {@code body}'s or the
     *     acquisition's exception
     * @throws NullPointerException if {@code body} is null
     */
    public <T> CompletableFuture<T> withWriteLockAsync(Supplier<? extends CompletionStage<T>> body) {
        if (body == null) {
            throw new NullPointerException("withWriteLockAsync(null): the body is null");
        }
        return ScopedAsync.run(core.acquireAsync(maxReaders, "withWriteLockAsync()", markWriteLocked),
                this::writeUnlock, body, "withWriteLockAsync()");
    }

    /**
     * Takes the write lock, returning a future completed once it is held. A cancelled future
     * never holds the lock; see {@link Semaphore#acquireAsync(long)}.
     *
     * @return a future completed once this caller holds the write lock
     */
    public CompletableFuture<Void> writeLockAsync() {
        return core.acquireAsync(maxReaders, "writeLockAsync()", markWriteLocked);
    }

    /**
     * Takes the write lock, parking the calling thread (safe on virtual threads).
     *
     * @throws InterruptedException if interrupted before the grant (nothing is held); if the grant
     *     won the race, returns normally with the interrupt flag set
     */
    public void writeLockBlocking() throws InterruptedException {
        core.acquireBlocking(maxReaders, "writeLockBlocking()", markWriteLocked);
    }

    /**
     * Releases the write lock: the waiters at the head of the queue (a writer, or the readers up
     * to the next writer) get it, in order.
     *
     * @throws IllegalStateException if the lock is not write-locked (nothing changes)
     */
    public void writeUnlock() {
        writeUnlock(null, "writeUnlock()");
    }

    /**
     * Releases the write lock like {@link #writeUnlock()}, but the wakers of the waiters it lets
     * in run on {@code wakeExecutor}, not on this thread. The lock is handed over before this
     * method returns; only the {@code wake()} calls move (see
     * {@link Semaphore#release(long, Executor)}). If the executor refuses the task, the wakers run
     * on this thread.
     *
     * @param wakeExecutor where the wake-ups caused by this unlock run
     * @throws NullPointerException if {@code wakeExecutor} is null (nothing changes)
     * @throws IllegalStateException if the lock is not write-locked (nothing changes)
     */
    public void writeUnlock(Executor wakeExecutor) {
        if (wakeExecutor == null) {
            throw new NullPointerException("writeUnlock(null): the executor is null");
        }
        writeUnlock(wakeExecutor, "writeUnlock(executor)");
    }

    private void writeUnlock(Executor wakes, String call) {
        int grants = clearWriteLocked(call);
        if (core.release(maxReaders, wakes) >= 0) {
            restoreWriteLocked(grants);
            throw new IllegalStateException(call + ": the write lock's permits are not held");
        }
    }

    /**
     * Turns the held write lock into a read lock, atomically: no writer can take the lock in
     * between. The read permits given up go to the queue in order, so waiting readers at the head
     * are let in; a waiting writer at the head is handed them but still waits for this read lock.
     * Afterwards release with {@link #readUnlock()}.
     *
     * @throws IllegalStateException if the lock is not write-locked (nothing changes)
     */
    public void downgrade() {
        int grants = clearWriteLocked("downgrade()");
        if (maxReaders > 1 && core.release(maxReaders - 1L) >= 0) {
            restoreWriteLocked(grants);
            throw new IllegalStateException("downgrade(): the write lock's permits are not held");
        }
    }

    /**
     * One CAS from write-locked to not, so that of two racing unlocks only one proceeds; returns
     * the writers' grant count read after it (see writeGrants).
     */
    private int clearWriteLocked(String call) {
        if (!WRITE_LOCKED.compareAndSet(this, true, false)) {
            throw new IllegalStateException(call + ": the lock is not write-locked");
        }
        return writeGrants;
    }

    /**
     * After an unlock cleared the flag and its release was refused (the permits were not held: a
     * misused unlock): puts the flag back, unless a writer's provisional grant was undone meanwhile
     * (the flag was that writer's, and it never held the lock), so the refused call changes nothing.
     */
    private void restoreWriteLocked(int grants) {
        if (writeGrants == grants) {
            WRITE_LOCKED.compareAndSet(this, false, true);
        }
    }

    // ------------------------------------------------------------------ observers

    /**
     * Returns whether a writer holds the lock. A snapshot for monitoring: the flag and the
     * permits change one after the other, so while a writer is being granted or is unlocking it
     * may briefly disagree with {@link #readLockCount()} and {@link #tryReadLock()}.
     *
     * @return {@code true} if write-locked
     */
    public boolean isWriteLocked() {
        return writeLocked;
    }

    /**
     * Returns the number of readers holding the lock; {@code 0} while write-locked. A snapshot for
     * monitoring: while a writer is being granted or is unlocking, its permits may briefly be
     * counted as readers.
     *
     * @return the readers holding the lock
     */
    public int readLockCount() {
        if (writeLocked) {
            return 0;
        }
        return (int) core.heldPermits();
    }

    /**
     * Returns the number of waiting readers and writers. A snapshot, exact at some moment
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
     * @return for example {@code "RwLock[maxReaders=8, write-locked, queued=3]"}
     */
    @Override
    public String toString() {
        return "RwLock[maxReaders=" + maxReaders + ", " + (writeLocked ? "write-locked" : "readers=" + readLockCount())
                + ", queued=" + core.queueLength() + "]";
    }

    private static long nanos(String call, Duration timeout) {
        if (timeout == null) {
            throw new NullPointerException(call + "(null): the timeout is null");
        }
        return Semaphore.saturatedNanos(timeout);
    }

    /** The core, for tests of this package. */
    BatchSemaphore core() {
        return core;
    }

    private static final VarHandle WRITE_LOCKED;
    private static final VarHandle WRITE_GRANTS;

    static {
        try {
            WRITE_LOCKED = MethodHandles.lookup().findVarHandle(RwLock.class, "writeLocked", boolean.class);
            WRITE_GRANTS = MethodHandles.lookup().findVarHandle(RwLock.class, "writeGrants", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
