// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

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
 *     try (Permits read = lock.readLockBlocking()) {
 *         return map.get(key);
 *     }
 * }
 *
 * void put(String key, String value) throws InterruptedException {
 *     try (Permits write = lock.writeLockBlocking()) {
 *         map.put(key, value);
 *     }
 * }
 * }</pre>
 *
 * <p>A write lock's handle ({@link WritePermits}) releases what its holder holds <em>now</em>: the
 * write lock, or the read lock it became by a {@link #downgrade()}. So a downgrade inside
 * try-with-resources leaks nothing, and {@link WritePermits#downgrade()} returns the read lock as a
 * handle of its own:
 *
 * <pre>{@code
 * try (Permits write = lock.writeLockBlocking()) {
 *     map.put(key, value);
 *     lock.downgrade();              // now a read lock: readers may join, no writer can
 *     audit(map);
 * }                                  // read-unlocks here
 * }</pre>
 *
 * <p>Release a lock either through its handle or by count ({@link #readUnlock()},
 * {@link #writeUnlock()}), not both: a handle whose lock was released by count would release
 * another holder's.
 *
 * <p>Method names follow {@link Semaphore}'s: no suffix never waits ({@link #tryReadLock()}),
 * {@code Then} calls back, {@code Async} returns a future, {@code Blocking} parks the thread.
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
public final class RwLock implements PrimitiveView {

    /** The number of concurrent readers allowed by {@link #RwLock()}: 2<sup>30</sup>. */
    public static final int DEFAULT_MAX_READERS = 1 << 30;

    private final FifoCore core;
    private final int maxReaders;

    /** The name given to the builder, or null. */
    private final @Nullable String name;

    /** What to do about a handle (read or write) that leaks, or null (off); see {@link LeakDetection}. */
    final @Nullable LeakDetection leaks;

    /** How a read lock's {@link Permits} handle unlocks it (a class, not a lambda: see {@link PermitHandles.GiveBack}). */
    final PermitHandles.GiveBack readUnlocker = new PermitHandles.GiveBack() {
        @Override
        public void giveBack(long permits) {
            readUnlock();
        }

        @Override
        public String describeHeld(long permits, Object owner) {
            return "1 permit of " + owner + " (a read lock)";
        }
    };

    /**
     * Whether a writer holds the lock. Set at the writer's grant — under the core's lock for a
     * handoff (see markWriteLocked), right after the CAS for an immediate grant — and cleared by
     * one CAS in writeUnlock/downgrade, so two racing unlocks cannot both succeed.
     */
    private volatile boolean writeLocked;

    /**
     * The handle of the write grant in force, or null if the writer took the lock without one (a
     * {@code try} or callback face) or no writer holds it. Written at a write grant (under the core's
     * lock), and by the one holder in writeUnlock and downgrade, so {@link #downgrade()} finds the
     * handle whose lock it turns into a read lock.
     */
    volatile @Nullable WriteGrant holder;

    /** Runs at a writer's grant, before anyone is woken: a volatile write. */
    final FifoCore.GrantUndo markWriteLocked = new FifoCore.GrantUndo() {
        @Override
        public void run() {
            WRITE_GRANTS.getAndAdd(RwLock.this, 1);
            holder = null;
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
        this(maxReaders, (Builder) null);
    }

    private RwLock(Builder b) {
        this(b.maxReaders, b);
    }

    /** Checks the arguments, then creates the lock with {@code b}'s options (or none). */
    private RwLock(int maxReaders, Builder b) {
        if (maxReaders < 1) {
            throw new IllegalArgumentException(
                    (b == null ? "new RwLock(" : "builder(") + maxReaders + "): maxReaders must be at least 1");
        }
        this.maxReaders = maxReaders;
        this.name = b == null ? null : b.name;
        LeakDetection mode = b == null || b.leakDetection == null ? LeakDetection.DEFAULT : b.leakDetection;
        this.leaks = mode == LeakDetection.OFF ? null : mode;
        this.core = new FifoCore(
                maxReaders,
                Long.MAX_VALUE,
                b == null ? Integer.MAX_VALUE : b.maxQueueLength,
                b == null ? null : b.listener,
                this);
        if (b != null && b.listener != null && b.name != null) {
            b.listener.attached(b.name);
        }
    }

    /**
     * Starts building a lock that admits up to {@code maxReaders} readers at once, with options: a
     * name, a bound on the wait queue, a listener.
     *
     * <pre>{@code
     * RwLock cache = RwLock.builder(64)
     *         .name("cache")
     *         .listener(new JfrWaitListener())   // handoff-jfr: events named "cache"
     *         .build();
     * }</pre>
     *
     * @param maxReaders the read permits, at least 1
     * @return a builder
     * @throws IllegalArgumentException if {@code maxReaders < 1}
     */
    public static Builder builder(int maxReaders) {
        if (maxReaders < 1) {
            throw new IllegalArgumentException("builder(" + maxReaders + "): maxReaders must be at least 1");
        }
        return new Builder(maxReaders);
    }

    /**
     * Options of a {@link RwLock}: see {@link RwLock#builder(int)}. Not thread-safe; each
     * {@link #build()} makes a new lock.
     */
    public static final class Builder extends TrackedBuilder<Builder, RwLock> {
        private final int maxReaders;

        private Builder(int maxReaders) {
            this.maxReaders = maxReaders;
        }

        /**
         * Builds the lock, unlocked.
         *
         * @return a new lock with these options
         */
        @Override
        public RwLock build() {
            return new RwLock(this);
        }
    }

    @Override
    public @Nullable String name() {
        return name;
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
     * @return {@code true} if read-locked, to be followed by {@link #readUnlock()}
     * @throws InterruptedException if interrupted before the grant (nothing is held)
     * @throws SemaphoreClosedException if the lock is or gets closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and the queue is full
     * @throws NullPointerException if {@code timeout} is null
     */
    public boolean tryReadLockBlocking(Duration timeout) throws InterruptedException {
        return core.tryAcquire(1, nanos("tryReadLockBlocking", timeout), "tryReadLockBlocking(" + timeout + ")", null);
    }

    /**
     * Takes a read lock without blocking a thread, giving up after {@code timeout}: the future
     * completes with {@code true} once read-locked (the caller must {@link #readUnlock()}), with
     * {@code false} if the timeout came first (nothing held); see
     * {@link Semaphore#tryAcquireAsync(long, Duration)}.
     *
     * @param timeout the longest wait; zero or negative does not wait
     * @return a future of whether the read lock was granted
     * @throws NullPointerException if {@code timeout} is null
     */
    public CompletableFuture<Boolean> tryReadLockAsync(Duration timeout) {
        return core.tryAcquireAsync(1, nanos("tryReadLockAsync", timeout), "tryReadLockAsync(" + timeout + ")", null);
    }

    /**
     * The callback primitive for readers: see {@link Semaphore#acquireThen(long, Waker)}.
     *
     * @param waker what to run once the read lock is held
     * @return the handle of the wait
     * @throws NullPointerException if {@code waker} is null
     */
    public Acquisition readLockThen(Waker waker) {
        return core.lockThen(1, waker, null, "readLockThen");
    }

    /** {@link dev.handoff.spi.Adapters#startReadLock(RwLock, Acquisition)}. */
    <A extends Acquisition> A startReadLock(A acquisition) {
        return core.startLock(acquisition, 1, null, "startReadLock");
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
    public <T extends @Nullable Object> CompletableFuture<T> withReadLockAsync(
            Supplier<? extends CompletionStage<T>> body) {
        return core.withLockAsync(1, body, "withReadLockAsync", null, readUnlocker, this::readUnlock);
    }

    /**
     * Takes a read lock, returning a future completed once it is held. A cancelled future never
     * holds the lock; see {@link Semaphore#acquireAsync(long)}.
     *
     * @return a future completed with the read lock's handle once this caller holds it
     */
    public CompletableFuture<Permits> readLockAsync() {
        return core.acquireAsync(1, "readLockAsync()", readUnlocker, leaks);
    }

    /**
     * Takes a read lock, parking the calling thread (safe on virtual threads).
     *
     * @return the read lock's handle: {@link Permits#close()} (or {@link #readUnlock()}) unlocks
     * @throws InterruptedException if interrupted before the grant (nothing is held); if the grant
     *     won the race, returns normally with the interrupt flag set
     * @throws SemaphoreClosedException if the lock is or gets closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and the queue is full
     */
    public Permits readLockBlocking() throws InterruptedException {
        return core.acquireBlocking(1, "readLockBlocking()", readUnlocker, leaks);
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

    void readUnlock(@Nullable Executor wakes, String call) {
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
     * @return {@code true} if write-locked, to be followed by {@link #writeUnlock()}
     * @throws InterruptedException if interrupted before the grant (nothing is held)
     * @throws SemaphoreClosedException if the lock is or gets closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and the queue is full
     * @throws NullPointerException if {@code timeout} is null
     */
    public boolean tryWriteLockBlocking(Duration timeout) throws InterruptedException {
        return core.tryAcquire(
                maxReaders,
                nanos("tryWriteLockBlocking", timeout),
                "tryWriteLockBlocking(" + timeout + ")",
                markWriteLocked);
    }

    /**
     * Takes the write lock without blocking a thread, giving up after {@code timeout}: the future
     * completes with {@code true} once write-locked (the caller must {@link #writeUnlock()}), with
     * {@code false} if the timeout came first (nothing held); see
     * {@link Semaphore#tryAcquireAsync(long, Duration)}.
     *
     * @param timeout the longest wait; zero or negative does not wait
     * @return a future of whether the write lock was granted
     * @throws NullPointerException if {@code timeout} is null
     */
    public CompletableFuture<Boolean> tryWriteLockAsync(Duration timeout) {
        return core.tryAcquireAsync(
                maxReaders, nanos("tryWriteLockAsync", timeout), "tryWriteLockAsync(" + timeout + ")", markWriteLocked);
    }

    /**
     * The callback primitive for writers: see {@link Semaphore#acquireThen(long, Waker)}. The lock
     * counts as write-locked from the grant on, before the waker runs.
     *
     * @param waker what to run once the write lock is held
     * @return the handle of the wait
     * @throws NullPointerException if {@code waker} is null
     */
    public Acquisition writeLockThen(Waker waker) {
        return core.lockThen(maxReaders, waker, markWriteLocked, "writeLockThen");
    }

    /** {@link dev.handoff.spi.Adapters#startWriteLock(RwLock, Acquisition)}. */
    <A extends Acquisition> A startWriteLock(A acquisition) {
        return core.startLock(acquisition, maxReaders, markWriteLocked, "startWriteLock");
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
    public <T extends @Nullable Object> CompletableFuture<T> withWriteLockAsync(
            Supplier<? extends CompletionStage<T>> body) {
        WriteGrant grant = new WriteGrant(this); // (a null body fails before it is used)
        return core.withLockAsync(maxReaders, body, "withWriteLockAsync", grant, grant, grant::releaseHeld);
    }

    /**
     * Takes the write lock, returning a future completed once it is held. A cancelled future
     * never holds the lock (cancelling it before the grant withdraws the wait; a grant that wins
     * that race is released); see {@link Semaphore#acquireAsync(long)}.
     *
     * <pre>{@code
     * lock.writeLockAsync().thenAccept(write -> {
     *     try (write) {
     *         map.put(key, value);
     *     }
     * });
     * }</pre>
     *
     * @return a future completed with the write lock's handle once this caller holds it: its
     *     {@code close()} releases what it holds then (the write lock, or the read lock after a
     *     {@link #downgrade()}), and {@link WritePermits#downgrade()} turns it into a read lock
     */
    public CompletableFuture<WritePermits> writeLockAsync() {
        WriteGrant grant = new WriteGrant(this);
        if (leaks == null) {
            return new WriteFuture(core.acquireAsync(maxReaders, "writeLockAsync()", grant, grant), grant, null);
        }
        PermitLeaks.Tracked t = PermitLeaks.track(leaks, grant, this, "writeLockAsync()");
        return new WriteFuture(core.acquireAsync(maxReaders, "writeLockAsync()", grant, t), grant, t);
    }

    /**
     * Takes the write lock, parking the calling thread (safe on virtual threads).
     *
     * <pre>{@code
     * try (Permits write = lock.writeLockBlocking()) {
     *     map.put(key, value);
     * }
     * }</pre>
     *
     * @return the write lock's handle: its {@code close()} releases what it holds then (the write
     *     lock, or the read lock after a {@link #downgrade()}), and {@link WritePermits#downgrade()}
     *     turns it into a read lock with a handle of its own
     * @throws InterruptedException if interrupted before the grant (nothing is held); if the grant
     *     won the race, returns normally with the interrupt flag set
     * @throws SemaphoreClosedException if the lock is or gets closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and the queue is full
     */
    public WritePermits writeLockBlocking() throws InterruptedException {
        WriteGrant grant = new WriteGrant(this);
        if (leaks == null) {
            grant.handle = core.acquireBlocking(maxReaders, "writeLockBlocking()", grant, grant);
            return grant;
        }
        PermitLeaks.Tracked t = PermitLeaks.track(leaks, grant, this, "writeLockBlocking()");
        grant.handle = core.acquireBlocking(maxReaders, "writeLockBlocking()", grant, t);
        return grant.watched(t);
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

    void writeUnlock(@Nullable Executor wakes, String call) {
        WriteGrant handle = holder;
        int grants = clearWriteLocked(call);
        holder = null; // before the release: it may grant the next writer, who sets its own
        if (core.release(maxReaders, wakes) >= 0) {
            if (restoreWriteLocked(grants)) {
                holder = handle;
            }
            throw new IllegalStateException(call + ": the write lock's permits are not held");
        }
    }

    /**
     * Turns the held write lock into a read lock, atomically: no writer can take the lock in
     * between. The read permits given up go to the queue in order, so waiting readers at the head
     * are let in; a waiting writer at the head is handed them but still waits for this read lock.
     *
     * <p>Afterwards the write lock's handle, if it was taken with one ({@link #writeLockBlocking()},
     * {@link #writeLockAsync()}), releases the read lock: closing it read-unlocks, as does
     * {@link #readUnlock()} for a lock taken without a handle. Release it one way, not both.
     *
     * <pre>{@code
     * try (Permits write = lock.writeLockBlocking()) {
     *     map.put(key, value);
     *     lock.downgrade();   // readers may join, no writer can
     *     audit(map);
     * }                       // read-unlocks here
     * }</pre>
     *
     * @throws IllegalStateException if the lock is not write-locked (nothing changes)
     */
    public void downgrade() {
        downgrade("downgrade()");
    }

    void downgrade(String call) {
        WriteGrant handle = holder;
        int grants = clearWriteLocked(call);
        holder = null;
        if (maxReaders > 1 && core.release(maxReaders - 1L) >= 0) {
            if (restoreWriteLocked(grants)) {
                holder = handle;
            }
            throw new IllegalStateException(call + ": the write lock's permits are not held");
        }
        if (handle != null) {
            handle.downgraded = true; // its release is a read unlock from now on
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
    private boolean restoreWriteLocked(int grants) {
        return writeGrants == grants && WRITE_LOCKED.compareAndSet(this, false, true);
    }

    // ------------------------------------------------------------------ write handles

    /**
     * The handle of a write lock ({@link #writeLockBlocking()}, {@link #writeLockAsync()}): a
     * {@link Permits} of {@code maxReaders()} permits that can also turn into a read lock.
     *
     * <p>{@link #release()} and {@link #close()} release what the handle holds at that moment: the
     * write lock, or — once {@link RwLock#downgrade()} turned it into a read lock — that read lock.
     * {@link #downgrade()} moves the lock to a new handle instead: the write handle then counts as
     * released and closing it does nothing.
     *
     * <pre>{@code
     * RwLock.WritePermits write = lock.writeLockBlocking();
     * Permits read;
     * try {
     *     map.put(key, value);
     * } finally {
     *     read = write.downgrade();       // no writer can come in between
     * }
     * try (read) {
     *     audit(map);
     * }
     * }</pre>
     */
    public interface WritePermits extends Permits {

        /**
         * Turns the write lock this handle holds into a read lock, as {@link RwLock#downgrade()}
         * does, and returns the read lock's own handle; this handle then counts as released (its
         * {@code close()} does nothing). If the lock was already downgraded through
         * {@link RwLock#downgrade()}, the read lock it became moves to the returned handle.
         *
         * @return the read lock's handle: its {@code close()} read-unlocks
         * @throws IllegalStateException if this handle was already released or downgraded, or the
         *     lock is not write-locked (then the handle counts as released, as for {@link #release()})
         */
        Permits downgrade();
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
     * Returns a description for logs.
     *
     * @return for example {@code "RwLock[maxReaders=8, write-locked, queued=3]"}
     */
    @Override
    public String toString() {
        return "RwLock[" + (name == null ? "" : "name=" + name + ", ") + "maxReaders=" + maxReaders + ", "
                + (writeLocked ? "write-locked" : "readers=" + readLockCount())
                + ", queued=" + core.queueLength() + (isClosed() ? ", closed" : "") + "]";
    }

    /**
     * Closes the lock, as {@link Semaphore#close()} closes a semaphore. Idempotent. Every waiting
     * reader and writer fails (futures and blocked threads with {@link SemaphoreClosedException}, a
     * callback's {@link Acquisition#isClosed()}), later locks fail the same way and the
     * {@code try} locks return {@code false}; {@link #readUnlock()} and {@link #writeUnlock()} keep
     * working, so holders can still let go.
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

    private static long nanos(String call, Duration timeout) {
        if (timeout == null) {
            throw new NullPointerException(call + "(null): the timeout is null");
        }
        return Semaphore.saturatedNanos(timeout);
    }

    /** The core, for tests of this package. */
    FifoCore core() {
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
