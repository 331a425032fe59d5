// SPDX-License-Identifier: Apache-2.0
package dev.handoff.servlet;

import dev.handoff.adaptive.Outcome;
import dev.handoff.edge.Admission;
import dev.handoff.edge.Decision;
import dev.handoff.edge.ShedReason;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * One request's way through an {@link AdmissionFilter}: its admission, the request attribute that
 * marks it, and the listener of its asynchronous cycles.
 *
 * <p>The state moves one way, and only the first move out of {@code WAITING} counts, so the
 * decision's callback and the cycle's listener agree on who ends a wait:
 *
 * <pre>
 *   WAITING --(granted: dispatch)--> ADMITTED --(the filter's ASYNC pass)--> RUNNING
 *      |  \--(shed: written in AsyncContext.start, then complete)--> SHED
 *       \---(the cycle completed, failed or timed out first: the wait withdrawn)--> GONE
 *   a request admitted at once starts in RUNNING
 * </pre>
 *
 * <p>Whatever the state, a release of the admission is idempotent ({@link Admission#release}
 * counts the first call only): the listener releases on every end of a cycle, the pass that ran
 * the chain releases when the chain returns outside asynchronous mode or throws, and a grant that
 * finds the request gone gives its permits straight back. No path needs to know whether another
 * already released.
 *
 * <p>The listener follows the request into each asynchronous cycle it starts: the container hands
 * the listeners of a cycle {@code onStartAsync} when the next one starts and forgets them, so the
 * pass adds itself to the new cycle there. The listener of a cycle that ended in a dispatch stays
 * until the response ends.
 */
final class RequestPass implements AsyncListener {
    private static final int WAITING = 0;
    private static final int ADMITTED = 1;
    private static final int RUNNING = 2;
    private static final int SHED = 3;
    private static final int GONE = 4;

    private final AdmissionFilter filter;
    /** The response the filter was given: its status says how the request went. */
    private final HttpServletResponse response;
    /** Moved by CAS only; see the class notes. */
    private final AtomicInteger state;
    /** The wait, while WAITING; cancelled when the cycle ends first. Written once, before any read. */
    private final @Nullable CompletableFuture<Decision> pending;
    /** Set once, by the constructor or by the decision's callback before it leaves WAITING. */
    private volatile @Nullable Admission admission;

    /** A request admitted at once: its chain runs now. */
    RequestPass(AdmissionFilter filter, Admission admission, HttpServletResponse response) {
        this.filter = filter;
        this.response = response;
        this.state = new AtomicInteger(RUNNING);
        this.pending = null;
        this.admission = admission;
    }

    /** A request that waits for its decision in an asynchronous cycle. */
    RequestPass(AdmissionFilter filter, CompletableFuture<Decision> pending, HttpServletResponse response) {
        this.filter = filter;
        this.response = response;
        this.state = new AtomicInteger(WAITING);
        this.pending = pending;
    }

    // ------------------------------------------------------------------ the chain

    /**
     * Runs the chain holding the admission: releases it with the exception if the chain throws,
     * when the chain returns if the request is not in asynchronous mode, and else at the end of
     * that cycle, which {@code listening} says the pass already listens to (it waited in a cycle
     * and followed the request into any it started since).
     */
    void runChain(HttpServletRequest request, HttpServletResponse response, FilterChain chain, boolean listening)
            throws IOException, ServletException {
        try {
            chain.doFilter(request, response);
        } catch (Throwable thrown) {
            release(thrown);
            throw thrown;
        }
        if (!request.isAsyncStarted()) {
            release(filter.outcomeOf(this.response.getStatus()));
        } else if (!listening) {
            try {
                request.getAsyncContext().addListener(this);
            } catch (IllegalStateException ended) {
                // a container that takes no listener once the cycle has completed inside the chain
                release(filter.outcomeOf(this.response.getStatus()));
            }
        }
    }

    /**
     * Another pass of the request through the filter: the dispatch that resumes an admitted
     * request runs the chain holding its admission; any other pass (a forward, an include, an error
     * page, the dispatch of the servlet's own cycle) runs it under the admission as it stands.
     */
    void reenter(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        if (request.getDispatcherType() == DispatcherType.ASYNC && state.compareAndSet(ADMITTED, RUNNING)) {
            runChain(request, response, chain, true);
        } else {
            chain.doFilter(request, response);
        }
    }

    // ------------------------------------------------------------------ the wait

    /**
     * The decision's callback, on whichever thread settled it (the one releasing the permits, the
     * gate's timer, the container thread that suspended the request): only moves the state and
     * hands the work to the container, never runs the chain or blocks.
     */
    void decided(AsyncContext cycle, @Nullable Decision decision, @Nullable Throwable failure) {
        if (failure != null || decision == null) {
            // withdrawn (the cycle ended first: nothing to do) or a failure of the gate
            if (state.compareAndSet(WAITING, GONE)) {
                start(cycle, () -> {
                    try {
                        if (!response.isCommitted()) {
                            response.sendError(500);
                        }
                    } finally {
                        cycle.complete();
                    }
                });
            }
            return;
        }
        Admission granted = decision.admission();
        if (granted == null) {
            if (state.compareAndSet(WAITING, SHED)) {
                start(cycle, () -> {
                    try {
                        filter.writeShed(response, decision.shedReason(), decision.retryAfterSeconds());
                    } finally {
                        cycle.complete();
                    }
                });
            }
            return;
        }
        admission = granted;
        if (!state.compareAndSet(WAITING, ADMITTED)) {
            granted.release(Outcome.FAILURE); // the request ended while the grant was on its way
            return;
        }
        try {
            cycle.dispatch();
        } catch (IllegalStateException ended) {
            granted.release(Outcome.FAILURE); // the cycle ended between the grant and the dispatch
        }
    }

    /** Runs {@code task} on a container thread; nothing if the request is gone. */
    private static void start(AsyncContext cycle, ServletTask task) {
        try {
            cycle.start(() -> {
                try {
                    task.run();
                } catch (IOException | RuntimeException e) {
                    // the client is gone, or the response with it: nothing left to answer
                }
            });
        } catch (IllegalStateException ended) {
            // the request was completed and recycled meanwhile
        }
    }

    /** What {@link #start} runs. */
    private interface ServletTask {
        void run() throws IOException;
    }

    /**
     * Ends a wait that the cycle's end overtook: withdraws the request from the gate's queue (a
     * grant that wins the race finds the state GONE and gives its permits back).
     */
    private boolean abandonWait() {
        if (!state.compareAndSet(WAITING, GONE)) {
            return false;
        }
        CompletableFuture<Decision> wait = pending;
        if (wait != null) {
            wait.cancel(false);
        }
        return true;
    }

    // ------------------------------------------------------------------ the listener

    /** The response ended: the permits go back, counted by its status. */
    @Override
    public void onComplete(AsyncEvent event) {
        if (!abandonWait()) {
            release(filter.outcomeOf(response.getStatus()));
        }
    }

    /**
     * The cycle timed out: a request still waiting is shed (the gate's own timer was late), an
     * admitted one releases as a drop.
     */
    @Override
    public void onTimeout(AsyncEvent event) {
        if (abandonWait()) {
            try {
                filter.writeShed(response, ShedReason.TIMED_OUT, filter.retryAfterSeconds());
            } finally {
                event.getAsyncContext().complete();
            }
            return;
        }
        release(Outcome.DROPPED);
    }

    /**
     * The cycle failed (the client went away, the container failed the request): a request still
     * waiting withdraws and its cycle completes; an admitted one releases with the failure.
     */
    @Override
    public void onError(AsyncEvent event) {
        if (abandonWait()) {
            event.getAsyncContext().complete();
            return;
        }
        Throwable failure = event.getThrowable();
        if (failure != null) {
            release(failure);
        } else {
            release(Outcome.FAILURE);
        }
    }

    /** The request starts another cycle: listen to it too (the container forgets this one's). */
    @Override
    public void onStartAsync(AsyncEvent event) {
        event.getAsyncContext().addListener(this);
    }

    private void release(Outcome outcome) {
        Admission held = admission;
        if (held != null) {
            held.release(outcome);
        }
    }

    private void release(Throwable thrown) {
        Admission held = admission;
        if (held != null) {
            held.release(thrown);
        }
    }

    @Override
    public String toString() {
        return "RequestPass[" + filter.attribute() + ", state=" + state.get() + ", " + admission + "]";
    }
}
