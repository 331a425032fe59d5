// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/*
 * The result of ZooKeeperSemaphore.withPermitsAsync: it runs the body once the request is granted
 * and releases the lease when the body's stage completes, however it completes, exactly once. A
 * cancel before the grant withdraws the request first (withdrawing is set so that the failure the
 * withdrawal causes is not copied here); a grant that lands after the cancel is released without
 * running the body. Its own file so that the semaphore's file keeps the public API and its
 * documentation, and this, the wiring of the futures.
 */
final class ScopedLease<T> extends CompletableFuture<T> {

    private final CompletableFuture<Lease> acquired;
    /** Set before this future withdraws the request, so that the failure that causes is not copied here. */
    volatile boolean withdrawing;

    ScopedLease(CompletableFuture<Lease> acquired) {
        this.acquired = acquired;
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
        withdrawing = true;
        acquired.cancel(false); // still waiting: withdrawn; granted already: the grant sees us done
        return super.cancel(mayInterruptIfRunning);
    }

    /** Runs body on acquired's grant and completes the result with its stage, after the release. */
    static <T> CompletableFuture<T> start(
            long n, CompletableFuture<Lease> acquired, Supplier<? extends CompletionStage<T>> body) {
        ScopedLease<T> result = new ScopedLease<>(acquired);
        acquired.whenComplete((lease, failure) -> {
            if (failure != null) { // nothing granted, nothing to release
                if (!result.withdrawing) {
                    result.completeExceptionally(failure);
                }
                return;
            }
            if (result.isDone()) { // cancelled while the grant was landing
                lease.close();
                return;
            }
            CompletionStage<T> stage;
            try {
                stage = body.get();
                if (stage == null) {
                    throw new NullPointerException(
                            "withPermitsAsync(" + n + "): the body returned null instead of a CompletionStage");
                }
            } catch (Throwable t) {
                lease.close();
                result.completeExceptionally(t);
                return;
            }
            stage.whenComplete((value, error) -> {
                lease.close();
                if (error != null) {
                    result.completeExceptionally(error);
                } else {
                    result.complete(value);
                }
            });
        });
        return result;
    }
}
