// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The future of {@link FairShareSemaphore#acquireAsync}: its own waker. The race between the
 * grant's claim and the user's cancel or exceptional completion, and the refusal of completions by
 * hand, are {@link AcquisitionFuture}'s; a withdrawal cancels the ticket.
 */
final class FairShareFuture extends AcquisitionFuture<Permits> implements Waker {
    private final String call;
    /** Set by the scheduler's enqueue before the ticket can settle. */
    @Nullable
    FairShareTicket<?> ticket;

    FairShareFuture(String call) {
        this.call = call;
    }

    @Override
    String call() {
        return call;
    }

    @Override
    public boolean claim() {
        return claimGrant();
    }

    @Override
    public void wake() {
        FairShareTicket<?> t = Objects.requireNonNull(ticket); // stored by enqueue before the ticket can settle
        if (t.isGranted()) {
            grant(t);
        } else {
            Throwable failure = t.failure();
            fail(failure != null ? failure : CoreMessages.closedException(call));
        }
    }

    @Override
    void withdrawWait(boolean timedOut) {
        FairShareTicket<?> t = ticket;
        if (t != null) {
            t.withdraw(timedOut, defaultExecutor());
        }
    }
}
