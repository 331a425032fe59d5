// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * The future of an adaptive wait ({@code acquireAsync}, {@code withPermitsAsync}) while it stands
 * in for the gate's own: cancelling it, or failing it from outside (as {@code orTimeout} does),
 * withdraws the wait before it completes, as the semaphore's futures do. So whatever runs on its
 * completion (an admission gate shedding the request, a caller reading the queue) finds the wait
 * already gone, never one step behind on another thread.
 */
final class WithdrawingResult<T> extends CompletableFuture<T> {

    /** The gate's future of the wait, once it is made; null before (then the wait is withdrawn on completion). */
    private volatile @Nullable CompletableFuture<?> grant;

    /**
     * Set before this future withdraws its own wait: the failure of the gate's future that the
     * withdrawal causes is then not copied here (see {@link #withdrawnByThis}); the withdrawing call
     * completes this future with its own outcome.
     */
    private volatile boolean withdrawing;

    void waitsOn(CompletableFuture<?> grant) {
        this.grant = grant;
    }

    /** Whether the gate's future failed because this future withdrew it. */
    boolean withdrawnByThis() {
        return withdrawing;
    }

    /** Withdraws the wait, then publishes the cancellation. */
    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        withdraw(null);
        return super.cancel(mayInterruptIfRunning);
    }

    /**
     * As {@link #cancel}: withdraws the wait, then fails this future with {@code ex}; a
     * {@link TimeoutException} withdraws it as a timeout, anything else as a cancellation.
     */
    @Override
    public boolean completeExceptionally(Throwable ex) {
        withdraw(ex);
        return super.completeExceptionally(ex);
    }

    private void withdraw(@Nullable Throwable cause) {
        CompletableFuture<?> g = grant;
        if (g == null || isDone() || g.isDone()) {
            return; // not made yet, settled, or granted: the grant's own completion gives back what goes unused
        }
        withdrawing = true;
        if (cause instanceof TimeoutException) {
            g.completeExceptionally(cause);
        } else {
            g.cancel(false); // false if a grant won the race: its completion then gives the permits back
        }
    }
}
