// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * The asynchronous "acquire, run, release" of every face ({@code withPermitsAsync},
 * {@code withLockAsync}, ...): releases exactly when the grant happened, once, however the body
 * completes; releases nothing when the acquisition itself failed.
 */
final class ScopedAsync<T> extends CompletableFuture<T> {

    private final CompletableFuture<?> acquired;

    /**
     * Set before this future withdraws its own wait (cancel, timeout, an outside failure): the
     * acquisition's failure it causes is then not copied here; the withdrawing call completes this
     * future itself, with its own outcome.
     */
    private volatile boolean withdrawing;

    private ScopedAsync(CompletableFuture<?> acquired) {
        this.acquired = acquired;
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
    static <T> CompletableFuture<T> run(CompletableFuture<?> acquired, Runnable release,
            Supplier<? extends CompletionStage<T>> body, String call) {
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

    private void withdraw(Throwable cause) {
        if (isDone() || acquired.isDone()) {
            return; // settled, or granted: a grant's permits are released by the body's completion
        }
        withdrawing = true;
        if (cause instanceof TimeoutException) {
            acquired.completeExceptionally(cause);
        } else {
            acquired.cancel(false); // false if a grant won the race: the body then runs and releases
        }
    }
}
