// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * The future of {@code tryAcquireAsync(n, timeout)}: {@code true} once granted, {@code false} if
 * the timeout withdrew the wait first (nothing held, partial permits passed on), failed on close.
 *
 * <p>The timer is the JDK's {@code orTimeout} on the acquisition's own future, whose timeout
 * withdraws the wait exactly (see {@link FutureAcquisition}); when the wait settles first, the JDK
 * cancels the timer task and drops it from its queue, so nothing keeps the semaphore or the
 * request reachable afterwards. Cancelling this future withdraws the wait the same way; if the
 * grant won that race, the cancel returns {@code false} and the future completes with
 * {@code true}: {@code true} always means the permits are held, anything else that nothing is.
 */
final class TimedAcquisition extends CompletableFuture<Boolean> {

    private final CompletableFuture<?> acquisition;

    private TimedAcquisition(CompletableFuture<?> acquisition) {
        this.acquisition = acquisition;
    }

    static CompletableFuture<Boolean> of(CompletableFuture<?> acquisition, long nanos) {
        TimedAcquisition result = new TimedAcquisition(acquisition);
        acquisition.orTimeout(nanos, TimeUnit.NANOSECONDS).whenComplete((granted, error) -> {
            if (error == null) {
                result.settle(Boolean.TRUE);
                return;
            }
            Throwable cause =
                    error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
            if (cause instanceof TimeoutException) {
                result.settle(Boolean.FALSE);
            } else {
                result.fail(cause);
            }
        });
        return result;
    }

    private void settle(Boolean value) {
        super.complete(value);
    }

    private void fail(Throwable cause) {
        super.completeExceptionally(cause);
    }

    /**
     * Withdraws the wait and cancels this future; if the grant won the race, returns
     * {@code false} and this future completes with {@code true} (the permits are held).
     */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        // Withdrawing completes the acquisition with a CancellationException, which the handler
        // above turns into this future's cancellation at once.
        acquisition.cancel(mayInterruptIfRunning);
        if (!acquisition.isCompletedExceptionally()) {
            return false; // the grant won: this future completes with true
        }
        super.cancel(mayInterruptIfRunning);
        return isCancelled();
    }

    /**
     * Withdraws the wait like {@link #cancel}, then fails with {@code ex} (a TimeoutException
     * counts as the timeout: {@code false}); returns {@code false} if the grant won.
     */
    @Override
    public boolean completeExceptionally(Throwable ex) {
        acquisition.completeExceptionally(ex);
        if (!acquisition.isCompletedExceptionally()) {
            return false;
        }
        return super.completeExceptionally(ex);
    }

    /** Not supported: {@code true} must mean a grant and {@code false} a withdrawn wait. */
    @Override
    public boolean complete(Boolean value) {
        throw new UnsupportedOperationException(
                "complete is not supported on tryAcquireAsync's future;" + " cancel it to give up the wait");
    }

    /** Not supported, for the reason of {@link #complete}. */
    @Override
    public CompletableFuture<Boolean> completeOnTimeout(Boolean value, long timeout, TimeUnit unit) {
        throw new UnsupportedOperationException(
                "completeOnTimeout is not supported on tryAcquireAsync's future;" + " it has its own timeout");
    }

    /** Not supported, for the reason of {@link #complete}. */
    @Override
    public CompletableFuture<Boolean> completeAsync(Supplier<? extends Boolean> supplier, Executor executor) {
        throw new UnsupportedOperationException("completeAsync is not supported on tryAcquireAsync's future");
    }

    /** Not supported, for the reason of {@link #complete}. */
    @Override
    public CompletableFuture<Boolean> completeAsync(Supplier<? extends Boolean> supplier) {
        throw new UnsupportedOperationException("completeAsync is not supported on tryAcquireAsync's future");
    }

    /** Not supported, for the reason of {@link #complete}. */
    @Override
    public void obtrudeValue(Boolean value) {
        throw new UnsupportedOperationException("obtrudeValue is not supported on tryAcquireAsync's future");
    }

    /** Not supported, for the reason of {@link #complete}. */
    @Override
    public void obtrudeException(Throwable ex) {
        throw new UnsupportedOperationException("obtrudeException is not supported on tryAcquireAsync's future");
    }
}
