// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * A future that a face hands out in place of the core's acquisition future ({@code acquired}):
 * cancelling it, or failing it from outside (as {@code orTimeout} does), withdraws the wait first.
 * The scoped calls ({@link ScopedAsync}) and the write lock's future ({@link WriteFuture}) are
 * such futures.
 */
abstract class WithdrawingFuture<T> extends CompletableFuture<T> {

    /** The core's future of the acquisition this one stands for. */
    final CompletableFuture<?> acquired;

    /**
     * Set before this future withdraws its own wait (cancel, timeout, an outside failure): the
     * acquisition's failure it causes is then not copied here; the withdrawing call completes this
     * future itself, with its own outcome.
     */
    volatile boolean withdrawing;

    WithdrawingFuture(CompletableFuture<?> acquired) {
        this.acquired = acquired;
    }

    /**
     * Withdraws the wait first and only then publishes the cancellation, so a caller that sees
     * this future cancelled finds the wait already gone (queue length, listener, free permits).
     */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        withdraw(null);
        return super.cancel(mayInterruptIfRunning);
    }

    /**
     * As {@link #cancel}: withdraws the wait, then fails this future with {@code ex}. A
     * {@link TimeoutException} (as {@code orTimeout} delivers) withdraws it as a timeout, so the
     * {@link WaitListener} hears "timed out"; anything else withdraws it as a cancellation.
     */
    @Override
    public boolean completeExceptionally(Throwable ex) {
        withdraw(ex);
        return super.completeExceptionally(ex);
    }

    private void withdraw(@Nullable Throwable cause) {
        if (isDone() || acquired.isDone()) {
            return; // settled, or granted: the grant's own completion releases what this one will not use
        }
        withdrawing = true;
        if (cause instanceof TimeoutException) {
            acquired.completeExceptionally(cause);
        } else {
            acquired.cancel(false); // false if a grant won the race: its completion then releases
        }
    }
}
