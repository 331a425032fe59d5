// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.TimeoutException;

/**
 * The future returned by the asynchronous faces ({@code acquireAsync}, {@code lockAsync}, ...).
 *
 * <p>A cancelled future never holds permits. Whoever settles first wins, decided by one CAS (see
 * {@link AcquisitionFuture}): the queue node's claim (under the core's lock, at the grant) moves it
 * {@code OPEN -> CLAIMED}; the user's {@code cancel} or {@code completeExceptionally} (also
 * {@code orTimeout}, which calls it) move it {@code OPEN -> WITHDRAWN} ({@code OPEN -> TIMED_OUT}
 * for a {@link TimeoutException}) and then cancel the node, which returns any partial permits. A
 * grant that reaches the node between that CAS and the cancel is declined, and the listener hears
 * the withdrawal's reason (timed out or cancelled) either way. A user completion that loses the
 * race returns {@code false} and the future completes normally with the grant. {@code complete}
 * (so also {@code completeOnTimeout}), {@code obtrude*} and {@code completeAsync} are refused: a
 * normal completion always means a grant. A close wakes without claiming: the future then fails
 * with {@link SemaphoreClosedException}, unless the user completed it first. A failed grant (a
 * face's bookkeeping threw at the grant) fails the future with that exception.
 *
 * <p>The waker is the {@link Node}, never this future: the object handed to the caller has no
 * method that could fake a grant (a public {@code claim()}/{@code wake()} would).
 */
final class FutureAcquisition<T> extends AcquisitionFuture<T> {

    /** The queue node; its waker is this future, through package-private calls only. */
    final Node node;

    /** Names the call in the closed failure, for example {@code "acquireAsync(3)"}. */
    private final String call;

    FutureAcquisition(FifoCore owner, long min, long max, String call, Runnable onGrant, PermitHandles.GiveBack back) {
        this.node = new Node(owner, min, max, onGrant, this, back);
        this.call = call;
    }

    /**
     * The queue node of a future: claims and completes it. Once granted it is the future's value,
     * the {@link Permits} handle (so a wait allocates no separate handle); its waker methods are
     * protected, so the handle cannot fake a grant.
     */
    static final class Node extends HandleAcquisition {
        private final FutureAcquisition<?> future;
        private final long min;

        Node(
                FifoCore owner,
                long min,
                long max,
                Runnable onGrant,
                FutureAcquisition<?> future,
                PermitHandles.GiveBack back) {
            super(owner, max, onGrant, back);
            this.min = min;
            this.future = future;
        }

        @Override
        long minimum() {
            return min;
        }

        /** Withdraws; {@code timedOut} tells the listener why. */
        void withdraw(boolean timedOut) {
            if (timedOut) {
                // orTimeout runs this on the JDK's one shared timer thread: the waiters that the
                // withdrawn permits complete (and their futures' dependents) run on the futures'
                // default executor instead, so a slow dependent never delays every timeout in the
                // process. The withdrawal itself is done before this returns.
                cancelTimedOut(future.defaultExecutor());
            } else {
                cancel();
            }
        }

        @Override
        protected boolean claim() {
            return future.claimGrant();
        }

        /** A grant declined because a timeout had withdrawn the future: the listener hears "timed out". */
        @Override
        boolean declinedByTimeout() {
            return future.timedOut();
        }

        @Override
        protected void wake() {
            future.settle(this);
        }
    }

    /** This call's description, for messages (built only when one is needed). */
    @Override
    String call() {
        return CoreMessages.describe(call, node.minimum());
    }

    /** Completes the future as the node settled: granted, closed or failed. */
    private void settle(Node n) {
        if (n.isGranted()) {
            @SuppressWarnings("unchecked") // T is Permits: the faces create FutureAcquisition<Permits> only
            T value = (T) n;
            grant(value);
        } else if (n.isClosed()) {
            fail(CoreMessages.closedException(call()));
        } else {
            Throwable failure = n.failure();
            fail(
                    failure != null
                            ? failure
                            : new IllegalStateException(call() + ": woken without a grant, a close or a failure"));
        }
    }

    @Override
    void withdrawWait(boolean timedOut) {
        node.withdraw(timedOut); // returns partial permits; false only if a close got there first
    }
}
