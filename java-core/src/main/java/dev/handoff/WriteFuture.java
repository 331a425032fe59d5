// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The future of {@link RwLock#writeLockAsync()}: completed with the {@link WriteGrant} once the core's
 * future is granted (or, while leaks are detected, with the grant's watched handle, from then on
 * tracked by {@code tracked}). Cancelling it (or failing it, as {@code orTimeout} does) withdraws
 * the wait; a grant that lands after this future was settled is released at once.
 */
final class WriteFuture extends WithdrawingFuture<RwLock.WritePermits> {

    WriteFuture(CompletableFuture<Permits> acquired, WriteGrant grant, PermitLeaks.@Nullable Tracked tracked) {
        super(acquired);
        acquired.whenComplete((handle, error) -> {
            if (error != null) {
                if (!withdrawing) {
                    super.completeExceptionally(error);
                }
                return;
            }
            grant.handle = handle;
            RwLock.WritePermits value = tracked == null ? grant : grant.watched(tracked);
            if (!super.complete(value)) {
                handle.release(); // settled by the caller while the grant was landing
            }
        });
    }
}
