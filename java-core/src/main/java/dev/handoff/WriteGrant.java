// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.jspecify.annotations.Nullable;

/**
 * One writer's grant, with its handle: the grant hook that records it as the {@link RwLock}'s holder
 * (and undoes that with an undone provisional grant), the give-back of the core's handle (which
 * releases what is held now), and the {@link RwLock.WritePermits} the caller gets.
 *
 * <p>While leaks are detected, the caller gets a {@link Watched} handle in front of the grant
 * instead: the lock refers to the grant while write-locked (its {@code holder}, for
 * {@link RwLock#downgrade()}), so the grant itself never becomes garbage while it holds the write
 * lock; the watched handle does, and the cleaner's action (the {@link PermitLeaks.Tracked} in the
 * core's handle, which refers to the grant, not to the watched handle) releases through the grant
 * what it holds then: the write lock, or the read lock a {@code downgrade()} made of it.
 */
final class WriteGrant implements FifoCore.GrantUndo, PermitHandles.GiveBack, RwLock.WritePermits {

    private final RwLock lock;

    WriteGrant(RwLock lock) {
        this.lock = lock;
    }

    /** The core's handle of the grant: set once, by the thread that got it, before this is published. */
    @Nullable
    Permits handle;

    /** Set by {@link RwLock#downgrade()} while this grant's writer holds the lock: it is a read lock now. */
    volatile boolean downgraded;

    /**
     * {@code downgrade()}'s progress: {@code MOVE_ASKED} before it releases the core's handle, so
     * that release (its own, or a racing {@code close()}) moves the lock instead of unlocking it;
     * {@code MOVED} once moved; {@code MOVE_TAKEN} once one {@code downgrade()} returned the read handle.
     */
    private volatile int move;

    @Override
    public void run() { // at the grant, under the core's lock
        lock.markWriteLocked.run();
        lock.holder = this;
    }

    @Override
    public void undo() { // a provisional grant undone, under the core's lock
        if (lock.holder == this) {
            lock.holder = null;
        }
        lock.markWriteLocked.undo();
    }

    /** The core handle's release: what is held now, or (while moving) the downgrade. */
    @Override
    public void giveBack(long permits) {
        if (move == MOVE_ASKED) {
            if (!downgraded) {
                lock.downgrade("downgrade() of a write lock's handle");
            }
            move = MOVED;
            return; // the read lock now belongs to the handle downgrade() returns
        }
        if (downgraded) {
            lock.readUnlock(null, "close() of a downgraded write lock's handle");
        } else {
            lock.writeUnlock(null, "close() of a write lock's handle");
        }
    }

    /** For a leak report: the write lock, or the read lock it became by {@link RwLock#downgrade()}. */
    @Override
    public String describeHeld(long permits, Object owner) {
        return downgraded
                ? "1 permit of " + owner + " (a read lock, downgraded from the write lock)"
                : permits + " permits of " + owner + " (the write lock)";
    }

    /** The caller's handle while leaks are detected, watched by {@code tracked} (the give-back of the core's handle). */
    RwLock.WritePermits watched(PermitLeaks.Tracked tracked) {
        Watched w = new Watched(this);
        tracked.watch(w);
        return w;
    }

    /** The scoped faces' release: the handle's, by count. */
    void releaseHeld() {
        giveBack(lock.maxReaders());
    }

    @Override
    public long permits() {
        return lock.maxReaders();
    }

    @Override
    public boolean release() {
        return core().release();
    }

    @Override
    public boolean isReleased() {
        return core().isReleased();
    }

    @Override
    public Permits downgrade() {
        Permits h = core();
        move = MOVE_ASKED;
        h.release(); // moves the lock (here, or in a close() that won the race), or finds it released
        if (!MOVE.compareAndSet(this, MOVED, MOVE_TAKEN)) {
            throw new IllegalStateException("downgrade(): this write lock's handle was already released or downgraded");
        }
        if (lock.leaks != null) {
            PermitLeaks.Tracked t = PermitLeaks.track(lock.leaks, lock.readUnlocker, lock, "downgrade()");
            return t.watch(new PermitHandles.Held(1, t));
        }
        return new PermitHandles.Held(1, lock.readUnlocker);
    }

    private Permits core() {
        Permits h = handle;
        if (h == null) {
            throw new IllegalStateException("a write lock's handle used before its grant");
        }
        return h;
    }

    @Override
    public String toString() {
        Permits h = handle;
        return "WritePermits[" + lock.maxReaders()
                + (h == null || h.isReleased()
                        ? ", released]"
                        : downgraded ? ", downgraded to a read lock]" : ", held]");
    }

    /**
     * The caller's write handle while leaks are detected: the grant's handle, in an object that
     * nothing in the lock refers to, so that it can become garbage (see the class notes).
     */
    static final class Watched implements RwLock.WritePermits {
        private final WriteGrant grant;

        Watched(WriteGrant grant) {
            this.grant = grant;
        }

        @Override
        public long permits() {
            return grant.permits();
        }

        @Override
        public boolean release() {
            return grant.release();
        }

        @Override
        public boolean isReleased() {
            return grant.isReleased();
        }

        @Override
        public Permits downgrade() {
            return grant.downgrade();
        }

        @Override
        public String toString() {
            return grant.toString();
        }
    }

    private static final int MOVE_ASKED = 1;
    private static final int MOVED = 2;
    private static final int MOVE_TAKEN = 3;

    private static final VarHandle MOVE;

    static {
        try {
            MOVE = MethodHandles.lookup().findVarHandle(WriteGrant.class, "move", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
