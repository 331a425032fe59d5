// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * The asynchronous "acquire, run, release" of every face ({@code withPermitsAsync},
 * {@code withLockAsync}, ...): releases exactly when the grant happened, once, however the body
 * completes; releases nothing when the acquisition itself failed.
 */
final class ScopedAsync<T> extends WithdrawingFuture<T> {

    private ScopedAsync(CompletableFuture<?> acquired) {
        super(acquired);
    }

    /**
     * Runs {@code body} once {@code acquired} completes normally (a grant), and calls
     * {@code release} once when the stage it returns completes — normally, exceptionally, or
     * because {@code body} threw or returned {@code null}. If {@code acquired} fails (closed,
     * timed out, cancelled), the result fails with the same exception and nothing is released.
     * Cancelling the result before the grant withdraws the wait; a grant that wins that race is
     * released without running {@code body}. After {@code body} started, cancelling the result
     * does not stop it: its permits are released when its stage completes.
     */
    static <T> CompletableFuture<T> run(
            CompletableFuture<?> acquired, Runnable release, Supplier<? extends CompletionStage<T>> body, String call) {
        ScopedAsync<T> result = new ScopedAsync<>(acquired);
        acquired.whenComplete((granted, error) -> {
            if (error != null) { // nothing was granted: nothing to release
                if (!result.withdrawing) {
                    result.completeExceptionally(error);
                }
                return;
            }
            if (result.isDone()) { // cancelled by the caller while the grant was landing
                release.run();
                return;
            }
            CompletionStage<T> stage;
            try {
                stage = body.get();
                if (stage == null) {
                    throw new NullPointerException(call + ": the body returned null instead of a CompletionStage");
                }
            } catch (Throwable t) {
                release.run();
                result.completeExceptionally(t);
                return;
            }
            stage.whenComplete((value, failure) -> {
                release.run();
                if (failure != null) {
                    result.completeExceptionally(failure);
                } else {
                    result.complete(value);
                }
            });
        });
        return result;
    }
}
