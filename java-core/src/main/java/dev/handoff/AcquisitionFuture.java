// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * What the futures of a waiting acquisition (FutureAcquisition, FairShareSemaphore's future) have in
 * common: a normal completion always means a grant, so completing by hand is refused. {@code complete}
 * (so also {@code completeOnTimeout}), {@code completeAsync} and {@code obtrude*} throw
 * {@link UnsupportedOperationException} naming the call; {@code cancel} and
 * {@code completeExceptionally} (so {@code orTimeout}) are the subclass's, which withdraw the wait.
 */
abstract class AcquisitionFuture<T> extends CompletableFuture<T> {

    /** The call that made this future, for messages, for example {@code "acquireAsync(3)"}. */
    abstract String call();

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
        throw new UnsupportedOperationException(call() + ": completeOnTimeout is not supported on an acquisition's future;"
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
        throw new UnsupportedOperationException(call() + ": obtrudeException is not supported on an acquisition's future");
    }
}
