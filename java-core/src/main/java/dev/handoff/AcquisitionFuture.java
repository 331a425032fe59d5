// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * What the futures of a waiting acquisition (FutureAcquisition, FairShareSemaphore's future) have in
 * common. Whoever settles first wins, by one CAS on {@code settled}: the grant's claim
 * ({@link #claimGrant}: OPEN to CLAIMED, under the semaphore's lock) or the user's {@code cancel} or
 * exceptional completion (so {@code orTimeout}: OPEN to WITHDRAWN or TIMED_OUT), which then withdraws
 * the wait ({@link #withdrawWait}), so that a cancelled or failed future never holds permits. A normal
 * completion always means a grant, so completing by hand is refused: {@code complete} (so also
 * {@code completeOnTimeout}), {@code completeAsync} and {@code obtrude*} throw
 * {@link UnsupportedOperationException} naming the call.
 */
abstract class AcquisitionFuture<T> extends CompletableFuture<T> {

    private static final int OPEN = 0;
    private static final int CLAIMED = 1;
    private static final int WITHDRAWN = 2;
    /** Withdrawn by a {@link TimeoutException} (orTimeout): as WITHDRAWN, and tells the listener why. */
    private static final int TIMED_OUT = 3;

    /** OPEN, CLAIMED, WITHDRAWN or TIMED_OUT; moves once, by CAS. */
    private volatile int settled;

    /** The call that made this future, for messages, for example {@code "acquireAsync(3)"}. */
    abstract String call();

    /**
     * Takes the wait away from the semaphore after this future was withdrawn: the partial permits go
     * on to the next waiters. {@code timedOut}: withdrawn by a {@link TimeoutException}, which the
     * listener hears as "timed out"; the withdrawal then runs the wake-ups it causes on this future's
     * default executor, not on the JDK's one shared timer thread that runs {@code orTimeout}.
     */
    abstract void withdrawWait(boolean timedOut);

    /** The grant's claim (the waker's claim of the queue node): true if the future was still open. */
    final boolean claimGrant() {
        return SETTLED.compareAndSet(this, OPEN, CLAIMED);
    }

    /** Whether a timeout withdrew this future (a grant declined then is heard as "timed out"). */
    final boolean timedOut() {
        return settled == TIMED_OUT;
    }

    /** Takes the future away from the semaphore; false if the grant was claimed first. */
    private boolean withdraw(boolean timedOut) {
        if (!SETTLED.compareAndSet(this, OPEN, timedOut ? TIMED_OUT : WITHDRAWN)) {
            return settled != CLAIMED; // withdrawn before, by a cancel or a timeout
        }
        withdrawWait(timedOut);
        return true;
    }

    /**
     * Cancels the wait. Returns {@code true} only if the wait was withdrawn and no permits are
     * held; if the grant won the race, returns {@code false} and the future completes normally.
     */
    @Override
    public final boolean cancel(boolean mayInterruptIfRunning) {
        return withdraw(false) && super.cancel(mayInterruptIfRunning);
    }

    /** Withdraws the wait (no permits will be held by it), then fails with {@code ex}. */
    @Override
    public final boolean completeExceptionally(Throwable ex) {
        // orTimeout completes it with a TimeoutException: the listener hears "timed out".
        return withdraw(ex instanceof TimeoutException) && super.completeExceptionally(ex);
    }

    /** Fails this future from the semaphore's side (closed, failed): no withdrawal, the wait is over. */
    final boolean fail(Throwable ex) {
        return super.completeExceptionally(ex);
    }

    /** Completes this future normally: the grant, from the subclass's wake-up (complete is refused). */
    final boolean grant(T value) {
        return super.complete(value);
    }

    /**
     * Not supported: a normal completion must mean "granted, release the permits later", and a
     * completion by hand would hold none. Use {@code cancel} or {@code orTimeout} to give up.
     */
    @Override
    public final boolean complete(T value) {
        throw new UnsupportedOperationException(call() + ": complete is not supported on an acquisition's future;"
                + " use cancel or orTimeout to give up the wait");
    }

    /** Not supported, for the reason of {@link #complete}: use {@code orTimeout} to bound the wait. */
    @Override
    public final CompletableFuture<T> completeOnTimeout(T value, long timeout, TimeUnit unit) {
        throw new UnsupportedOperationException(
                call() + ": completeOnTimeout is not supported on an acquisition's future;"
                        + " use orTimeout to bound the wait");
    }

    /** Not supported: it would bypass the withdrawal that keeps permits exact. */
    @Override
    public final CompletableFuture<T> completeAsync(Supplier<? extends T> supplier, Executor executor) {
        throw new UnsupportedOperationException(call() + ": completeAsync is not supported on an acquisition's future");
    }

    /** Not supported: it would bypass the withdrawal that keeps permits exact. */
    @Override
    public final CompletableFuture<T> completeAsync(Supplier<? extends T> supplier) {
        throw new UnsupportedOperationException(call() + ": completeAsync is not supported on an acquisition's future");
    }

    /** Not supported: forcing a value could hide or invent a grant. */
    @Override
    public final void obtrudeValue(T value) {
        throw new UnsupportedOperationException(call() + ": obtrudeValue is not supported on an acquisition's future");
    }

    /** Not supported: forcing a failure could hide a grant whose permits must be released. */
    @Override
    public final void obtrudeException(Throwable ex) {
        throw new UnsupportedOperationException(
                call() + ": obtrudeException is not supported on an acquisition's future");
    }

    private static final VarHandle SETTLED;

    static {
        try {
            SETTLED = MethodHandles.lookup().findVarHandle(AcquisitionFuture.class, "settled", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
