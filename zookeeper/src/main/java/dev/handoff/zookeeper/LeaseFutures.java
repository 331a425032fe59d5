// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/*
 * How the blocking faces (ZooKeeperSemaphore's and LocalFront's) wait for a lease's future. An
 * interrupt or a timeout cancels the request; if the grant won that race the lease is returned
 * instead (with the interrupt flag set again), so that a blocking caller never leaks one. A
 * failure is thrown as it is, unwrapped from the future's wrappers. A one-shot request (a zero
 * timeout) that its one decision did not grant completes with NOT_GRANTED, which becomes an empty
 * answer here and is never seen by a caller. Kept apart so that both faces wait the same way.
 */
final class LeaseFutures {

    private LeaseFutures() {}

    /** A one-shot request that was not granted by its one decision; never seen by callers. */
    static final RuntimeException NOT_GRANTED = new IllegalStateException("not granted by its one decision") {
        private static final long serialVersionUID = 1L;

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this;
        }
    };

    static Lease awaitLease(CompletableFuture<Lease> future) throws InterruptedException {
        try {
            return future.get();
        } catch (InterruptedException e) {
            if (future.cancel(false)) {
                throw e;
            }
            Thread.currentThread().interrupt();
            return joinGranted(future);
        } catch (ExecutionException e) {
            throw unwrap(e.getCause());
        }
    }

    /** Waits for a one-shot request's one decision: its lease, or empty if it was not granted. */
    static Optional<Lease> awaitOneDecision(CompletableFuture<Lease> future) throws InterruptedException {
        try {
            return Optional.of(awaitLease(future));
        } catch (RuntimeException e) {
            if (e == NOT_GRANTED) {
                return Optional.empty();
            }
            throw e;
        }
    }

    static Optional<Lease> awaitLease(CompletableFuture<Lease> future, Duration timeout) throws InterruptedException {
        try {
            long nanos = timeout.isNegative() ? 0 : saturatedNanos(timeout);
            return Optional.of(future.get(nanos, TimeUnit.NANOSECONDS));
        } catch (TimeoutException e) {
            if (future.cancel(false)) {
                return Optional.empty();
            }
            return Optional.of(joinGranted(future));
        } catch (InterruptedException e) {
            if (future.cancel(false)) {
                throw e;
            }
            Thread.currentThread().interrupt();
            return Optional.of(joinGranted(future));
        } catch (ExecutionException e) {
            throw unwrap(e.getCause());
        }
    }

    private static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }

    /** The future lost its cancel, so it is complete: its lease, or its failure thrown. */
    private static Lease joinGranted(CompletableFuture<Lease> future) {
        try {
            return future.join();
        } catch (CompletionException e) {
            throw unwrap(e.getCause());
        } catch (CancellationException e) {
            throw e;
        }
    }

    static RuntimeException unwrap(Throwable t) {
        if (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof RuntimeException) {
            return (RuntimeException) t;
        }
        if (t instanceof Error) {
            throw (Error) t;
        }
        return new IllegalStateException(t.toString(), t);
    }
}
