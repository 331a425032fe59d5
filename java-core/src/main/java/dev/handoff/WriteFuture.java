// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The future of {@link RwLock#writeLockAsync()}: completed with the {@link WriteGrant} once the core's
 * future is granted. Cancelling it (or failing it, as {@code orTimeout} does) withdraws the
 * wait; a grant that lands after this future was settled is released at once.
 */
final class WriteFuture extends CompletableFuture<RwLock.WritePermits> {
    private final CompletableFuture<Permits> acquired;

    /** Set before this future withdraws its own wait: the failure that causes is not copied here. */
    private volatile boolean withdrawing;

    WriteFuture(CompletableFuture<Permits> acquired, WriteGrant grant) {
        this.acquired = acquired;
        acquired.whenComplete((handle, error) -> {
            if (error != null) {
                if (!withdrawing) {
                    super.completeExceptionally(error);
                }
                return;
            }
            grant.handle = handle;
            if (!super.complete(grant)) {
                handle.release(); // settled by the caller while the grant was landing
            }
        });
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        withdraw(null);
        return super.cancel(mayInterruptIfRunning);
    }

    @Override
    public boolean completeExceptionally(Throwable ex) {
        withdraw(ex);
        return super.completeExceptionally(ex);
    }

    private void withdraw(@Nullable Throwable cause) {
        if (isDone() || acquired.isDone()) {
            return; // settled, or granted: the grant's completion releases if this one is done
        }
        withdrawing = true;
        if (cause instanceof java.util.concurrent.TimeoutException) {
            acquired.completeExceptionally(cause); // a timeout, for the wait listener
        } else {
            acquired.cancel(false);
        }
    }
}
