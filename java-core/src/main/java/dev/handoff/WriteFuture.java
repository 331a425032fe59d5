// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.CompletableFuture;

/**
 * The future of {@link RwLock#writeLockAsync()}: completed with the {@link WriteGrant} once the core's
 * future is granted. Cancelling it (or failing it, as {@code orTimeout} does) withdraws the
 * wait; a grant that lands after this future was settled is released at once.
 */
final class WriteFuture extends WithdrawingFuture<RwLock.WritePermits> {

    WriteFuture(CompletableFuture<Permits> acquired, WriteGrant grant) {
        super(acquired);
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
}
