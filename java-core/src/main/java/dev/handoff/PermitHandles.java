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
 * {@code GiveBack} out of the handle by one atomic swap, so it is both the "released" flag and the
 * action. A queued wait's own node is its handle ({@code FutureAcquisition.Node},
 * {@code BatchSemaphore.ParkingAcquisition}), so a wait allocates nothing more; a grant made at
 * once allocates one object ({@link Held}, or {@link Granted} for a future, which is its own value).
 */
final class PermitHandles {

    private PermitHandles() {
    }

    /** How a face gives permits back by count: {@code release(n)}, {@code unlock()}, {@code readUnlock()}... */
    @FunctionalInterface
    interface GiveBack {
        /**
         * Gives {@code permits} back.
         *
         * @throws IllegalStateException if they are not held (an over-release); nothing changes then
         */
        void giveBack(long permits);
    }

    /**
     * The release of a handle whose {@code GiveBack} was just swapped out: {@code back} is what the
     * swap returned ({@code null}: released before).
     */
    static boolean release(GiveBack back, long permits) {
        if (back == null) {
            return false;
        }
        back.giveBack(permits); // an over-release throws: the handle stays released, nothing changed
        return true;
    }

    /** For a handle's toString(). */
    static String describe(long permits, boolean released) {
        return "Permits[" + permits + (released ? ", released]" : ", held]");
    }

    /** A handle for permits granted at once to a blocking call. */
    static final class Held implements Permits {
        private final long permits;
        private volatile GiveBack back;

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
            return PermitHandles.release((GiveBack) HELD_BACK.getAndSet(this, null), permits);
        }

        @Override
        public boolean isReleased() {
            return back == null;
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
        private volatile GiveBack back;

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
            return PermitHandles.release((GiveBack) GRANTED_BACK.getAndSet(this, null), permits);
        }

        @Override
        public boolean isReleased() {
            return back == null;
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
            HELD_BACK = l.findVarHandle(Held.class, "back", GiveBack.class);
            GRANTED_BACK = l.findVarHandle(Granted.class, "back", GiveBack.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
