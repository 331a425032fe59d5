// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The {@link Permits} handles of the faces. A handle gives its permits back through the face's
 * release by count ({@link GiveBack}), once: the first {@code release()} takes the face's
 * {@code GiveBack} out of the handle (see {@link #release(Object, VarHandle, long)}), so the field
 * is both the "released" flag and the action. A queued wait's own node is its handle (a
 * {@link HandleAcquisition}), so a wait allocates nothing more; a grant made at
 * once allocates one object ({@link Held}, or {@link Granted} for a future, which is its own value).
 */
final class PermitHandles {

    private PermitHandles() {}

    /**
     * How a face gives permits back by count: {@code release(n)}, {@code unlock()}, {@code readUnlock()}...
     * A face keeps its GiveBack in a field of its own, as a class rather than a lambda or a method
     * reference: those are hidden classes, whose captured fields Lincheck's model checker cannot
     * locate (it takes field offsets through {@code sun.misc.Unsafe}, which refuses hidden
     * classes), so it would warn "Failed to get object field offset" and leave them out of its view.
     */
    /** The give-back of a zero-permit handle: it holds nothing, but reads as held until released. */
    static final GiveBack NOTHING_TO_GIVE_BACK = new NothingToGiveBack();

    /** A class, not a lambda: see {@link GiveBack}'s note on hidden classes. */
    private static final class NothingToGiveBack implements GiveBack {
        @Override
        public void giveBack(long permits) {
            // zero permits: nothing to give back
        }
    }

    @FunctionalInterface
    interface GiveBack {
        /**
         * Gives {@code permits} back.
         *
         * @throws IllegalStateException if they are not held (an over-release); nothing changes then
         */
        void giveBack(long permits);

        /**
         * For a leak report: what a handle of {@code permits} that gives back here holds now, and of
         * what ({@code owner}, the primitive). By default that many permits; a lock's handle says
         * which lock it holds.
         */
        default String describeHeld(long permits, Object owner) {
            return permits + (permits == 1 ? " permit of " : " permits of ") + owner;
        }
    }

    /**
     * The release of a handle whose field {@code back} (read and written through the VarHandle
     * {@code field}) holds the face's GiveBack while the permits are held, the releasing thread
     * while they are being given back, and null once they are: the first call puts its thread there
     * by CAS, gives back, and then clears it (also when the give-back throws: the handle then counts
     * as released, and nothing changed in the semaphore). A concurrent call on another thread waits
     * for that end, so "false: already released" is never answered while the permits are still
     * held; a call on the releasing thread itself (a waker or a future's dependent that the
     * give-back ran, releasing the same handle again) answers false at once, since only that
     * thread can finish the release it is inside of.
     */
    static boolean release(Object handle, VarHandle field, long permits) {
        Object back = field.getAcquire(handle);
        Thread me = Thread.currentThread();
        for (; ; ) {
            if (back == null) {
                return false;
            }
            if (back instanceof Thread) {
                if (back != me) {
                    awaitReleased(handle, field);
                }
                return false;
            }
            Object witness = field.compareAndExchange(handle, back, me);
            if (witness == back) {
                break;
            }
            back = witness;
        }
        try {
            ((GiveBack) back).giveBack(permits); // an over-release throws: the handle stays released, nothing changed
        } finally {
            field.setRelease(handle, (Object) null);
        }
        return true;
    }

    /** Waits (polling, yielding, then parking briefly; no monitor) until the handle is released. */
    private static void awaitReleased(Object handle, VarHandle field) {
        for (int waits = 1; field.getAcquire(handle) != null; waits++) {
            ShortWait.pause(handle, waits, 10_000L);
        }
    }

    /** Whether a handle whose field {@code back} holds {@code back} is released (not while it is being released). */
    static boolean isReleased(@org.jspecify.annotations.Nullable Object back) {
        return back == null;
    }

    /** For a handle's toString(). */
    static String describe(long permits, boolean released) {
        return "Permits[" + permits + (released ? ", released]" : ", held]");
    }

    /** A handle for permits granted at once to a blocking call. */
    static final class Held implements Permits {
        private final long permits;
        private volatile @org.jspecify.annotations.Nullable Object back; // see release

        Held(long permits, GiveBack back) {
            this.permits = permits;
            this.back = back;
        }

        @Override
        public long permits() {
            return permits;
        }

        @Override
        public boolean release() {
            return PermitHandles.release(this, HELD_BACK, permits);
        }

        @Override
        public boolean isReleased() {
            return PermitHandles.isReleased(back);
        }

        @Override
        public String toString() {
            return describe(permits, isReleased());
        }
    }

    /**
     * A future granted at once: completed with itself, the handle, so the fast path of an
     * asynchronous acquire allocates one object, as a completed future alone would. Its value
     * cannot be replaced: the obtrude methods are refused (the other completions find it done).
     */
    static final class Granted extends CompletableFuture<Permits> implements Permits {
        private final long permits;
        private volatile @org.jspecify.annotations.Nullable Object back; // see release

        Granted(long permits, GiveBack back) {
            this.permits = permits;
            this.back = back;
            super.complete(this);
        }

        @Override
        public long permits() {
            return permits;
        }

        @Override
        public boolean release() {
            return PermitHandles.release(this, GRANTED_BACK, permits);
        }

        @Override
        public boolean isReleased() {
            return PermitHandles.isReleased(back);
        }

        /** Not supported: the value is the handle of permits that are held. */
        @Override
        public void obtrudeValue(Permits value) {
            throw new UnsupportedOperationException("obtrudeValue is not supported on an acquisition's future");
        }

        /** Not supported: a failure would hide permits that are held. */
        @Override
        public void obtrudeException(Throwable ex) {
            throw new UnsupportedOperationException("obtrudeException is not supported on an acquisition's future");
        }

        /** Done already: returns this future, unchanged. */
        @Override
        public CompletableFuture<Permits> completeAsync(Supplier<? extends Permits> supplier, Executor executor) {
            return this;
        }

        /** Done already: returns this future, unchanged. */
        @Override
        public CompletableFuture<Permits> completeOnTimeout(Permits value, long timeout, TimeUnit unit) {
            return this;
        }

        @Override
        public String toString() {
            return describe(permits, isReleased()); // a handle first: the future is done from the start
        }
    }

    private static final VarHandle HELD_BACK;
    private static final VarHandle GRANTED_BACK;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            HELD_BACK = l.findVarHandle(Held.class, "back", Object.class);
            GRANTED_BACK = l.findVarHandle(Granted.class, "back", Object.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
