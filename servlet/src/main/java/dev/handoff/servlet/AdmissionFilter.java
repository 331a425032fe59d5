// SPDX-License-Identifier: Apache-2.0
package dev.handoff.servlet;

import dev.handoff.adaptive.Outcome;
import dev.handoff.edge.Admission;
import dev.handoff.edge.AdmissionControl;
import dev.handoff.edge.Decision;
import dev.handoff.edge.ShedReason;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import org.jspecify.annotations.Nullable;

/**
 * Admission control as a servlet {@link Filter}: every request takes its permits from an
 * {@link AdmissionControl} before the rest of the chain runs, and gives them back exactly once
 * when its response ends, however it ends. A request that cannot be admitted in time is shed: the
 * chain does not run and the client gets {@code 503 Service Unavailable} (or the
 * {@linkplain Builder#shedStatus(int) status set}) with {@code Retry-After:} the gate's hint in
 * seconds.
 *
 * <pre>{@code
 * AdmissionControl<HttpServletRequest> gate = AdmissionControl.<HttpServletRequest>builder()
 *         .capacity(64)
 *         .key(request -> request.getHeader("X-Tenant"), tenant -> 1)
 *         .maxWait(Duration.ofMillis(200))
 *         .build();
 * context.addFilter(new FilterHolder(new AdmissionFilter(gate)), "/*",
 *         EnumSet.of(DispatcherType.REQUEST, DispatcherType.ASYNC));   // Jetty; asyncSupported
 * }</pre>
 *
 * <h2>Waiting</h2>
 *
 * <p>A request whose permits are free is admitted at once and the chain runs on the calling
 * container thread, as without the filter. A request that must wait does not hold a container
 * thread if {@link ServletRequest#isAsyncSupported()}: the filter starts an asynchronous cycle
 * ({@code request.startAsync(request, response)}), returns the thread to the container, and waits
 * through {@link AdmissionControl#admitAsync}. When the permits are granted it calls
 * {@link AsyncContext#dispatch()}: the container dispatches the request again (dispatcher type
 * {@link DispatcherType#ASYNC}), the filter recognises it by a request attribute of its own, and
 * runs the chain holding the admission. When the request is shed instead, the filter writes the
 * answer in a task of {@link AsyncContext#start(Runnable)} and completes the cycle. The chain runs
 * in a dispatch rather than in {@code AsyncContext.start} because only a container dispatch is a
 * normal request to the servlet: one that may start its own asynchronous cycle
 * ({@code startAsync} outside a dispatch throws {@link IllegalStateException}), whose request
 * listeners, context class loader and security context are set, and whose end the container
 * completes. A request that does not support async (a filter or servlet of its chain is not
 * {@code asyncSupported}) waits in {@link AdmissionControl#admitBlocking}, parking its thread: on a
 * virtual thread that costs no carrier, since the gate never pins.
 *
 * <p>So map the filter for {@link DispatcherType#REQUEST} and {@link DispatcherType#ASYNC}, declare
 * it {@code asyncSupported}, and put it first: the filters before it see their
 * {@code chain.doFilter} return while a waiting request is suspended, as for any asynchronous
 * servlet, and run again on the dispatch only if they are mapped for {@code ASYNC}. The filters
 * after it run once, in the dispatch. If the filter is not mapped for {@code ASYNC}, the dispatch
 * goes straight past it to the filters after it that are, and to the servlet; the permits are still
 * held until the response ends.
 *
 * <h2>Releasing</h2>
 *
 * <p>The permits are held until the response ends:
 *
 * <ul>
 *   <li>when the chain returns, for a request that is not in asynchronous mode then;</li>
 *   <li>when the request's asynchronous cycle ends, for one that is (a servlet that called
 *       {@code startAsync} and completes later, a streaming response written from another
 *       thread): the filter listens to the cycle ({@link jakarta.servlet.AsyncListener}) and
 *       releases on its {@code onComplete}, {@code onError} or {@code onTimeout}, whichever comes
 *       first, and follows the request into any further cycle it starts;</li>
 *   <li>when the chain throws: the admission is released with the exception (the adaptive
 *       limit's classifier says how it counts: a timeout is a drop, anything else a failure), and
 *       the exception is rethrown.</li>
 * </ul>
 *
 * <p>A client that disconnects ends the request in one of these ways (the chain fails to write,
 * or the container reports the error to the cycle). Each release happens once
 * ({@link Admission#release(Outcome)} counts the first call only), so no path can lose or make a
 * permit. A request that the container never ends holds its permits: an asynchronous cycle with no
 * timeout that the application never completes keeps them, as it keeps its connection. The status
 * of the response tells an adaptive limit how the request went
 * ({@link Builder#outcomes}, by default {@link #defaultOutcome(int)}: below 500 a success, 503 and
 * 504 a drop, any other 5xx a failure); a fixed limit only releases.
 *
 * <p>A request is admitted once per filter: a later pass of the same request through the same
 * filter (a forward, an include, an error page, the dispatch of a servlet's own asynchronous
 * cycle) runs the chain under the first admission, or with none if it was already released.
 * Two filters over one request, with two gates, admit it once each.
 *
 * <p>Thread-safe: one instance serves every request.
 */
public final class AdmissionFilter implements Filter {

    /** Makes each filter's request attribute unique, so two filters over one request stay apart. */
    private static final AtomicLong INSTANCES = new AtomicLong();

    /** The longest a waiting request's cycle is given beyond {@code maxWait}, in milliseconds. */
    private static final long CYCLE_GRACE_MILLIS = 1_000;

    private final AdmissionControl<HttpServletRequest> gate;
    private final int shedStatus;
    private final @Nullable String shedReasonHeader;
    private final IntFunction<Outcome> outcomes;
    private final String attribute;
    private final long cycleTimeoutMillis;

    /**
     * Creates a filter over {@code gate} with the defaults: shed with {@code 503}, no reason
     * header, {@link #defaultOutcome(int)}.
     *
     * @param gate the admission control of the requests this filter sees
     * @throws NullPointerException if {@code gate} is null
     */
    public AdmissionFilter(AdmissionControl<HttpServletRequest> gate) {
        this(builder(gate));
    }

    private AdmissionFilter(Builder builder) {
        this.gate = builder.gate;
        this.shedStatus = builder.shedStatus;
        this.shedReasonHeader = builder.shedReasonHeader;
        this.outcomes = builder.outcomes;
        this.attribute = AdmissionFilter.class.getName() + ".pass." + INSTANCES.incrementAndGet();
        this.cycleTimeoutMillis = saturatedMillis(gate.maxWait()) + CYCLE_GRACE_MILLIS;
    }

    /**
     * Starts the options of a filter over {@code gate}.
     *
     * <pre>{@code
     * AdmissionFilter filter = AdmissionFilter.builder(gate)
     *         .shedStatus(429)
     *         .shedReasonHeader("X-Shed-Reason")
     *         .outcomes(status -> status >= 500 ? Outcome.DROPPED : Outcome.SUCCESS)
     *         .build();
     * }</pre>
     *
     * @param gate the admission control of the requests the filter sees
     * @return a new builder
     * @throws NullPointerException if {@code gate} is null
     */
    public static Builder builder(AdmissionControl<HttpServletRequest> gate) {
        if (gate == null) {
            throw new NullPointerException("builder(null): the admission control is null");
        }
        return new Builder(gate);
    }

    /**
     * How a response's status counts for an adaptive limit unless {@link Builder#outcomes} says
     * otherwise: below 500 {@link Outcome#SUCCESS} (the request's time is a latency sample, a 4xx
     * included: the server answered), 503 and 504 {@link Outcome#DROPPED} (overload, here or
     * downstream: the capacity shrinks), any other 5xx {@link Outcome#FAILURE} (an error that says
     * nothing of load: not sampled).
     *
     * @param status the response's status
     * @return its outcome
     */
    public static Outcome defaultOutcome(int status) {
        if (status < 500) {
            return Outcome.SUCCESS;
        }
        return status == 503 || status == 504 ? Outcome.DROPPED : Outcome.FAILURE;
    }

    /**
     * Returns the admission control this filter takes permits from, for its counters and its
     * primitive ({@code gate().primitive()}, {@code gate().shedCount(reason)}).
     *
     * @return the gate
     */
    public AdmissionControl<HttpServletRequest> gate() {
        return gate;
    }

    /**
     * Admits the request, then runs the chain holding its permits, or sheds it; see the class
     * description for when the permits go back.
     *
     * @param request the request, an {@link HttpServletRequest}
     * @param response the response, an {@link HttpServletResponse}
     * @param chain the rest of the chain
     * @throws IOException if the chain throws it
     * @throws ServletException if the chain throws it; if the request or response is not HTTP;
     *     if the thread was interrupted while it waited for admission (the interrupt flag set
     *     again, nothing held); or if the gate failed (the cause attached)
     * @throws RuntimeException if the chain throws it, or the gate's cost or key function does
     *     ({@link NullPointerException} for a null key, {@link IllegalArgumentException} for a
     *     cost below 1)
     */
    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        if (!(request instanceof HttpServletRequest) || !(response instanceof HttpServletResponse)) {
            throw new ServletException("AdmissionFilter admits HTTP requests only, not " + request);
        }
        HttpServletRequest httpRequest = (HttpServletRequest) request;
        HttpServletResponse httpResponse = (HttpServletResponse) response;
        Object mark = httpRequest.getAttribute(attribute);
        if (mark instanceof RequestPass) {
            ((RequestPass) mark).reenter(httpRequest, httpResponse, chain);
            return;
        }
        Decision decision;
        if (httpRequest.isAsyncSupported()) {
            CompletableFuture<Decision> pending = gate.admitAsync(httpRequest);
            if (!pending.isDone()) {
                suspend(httpRequest, httpResponse, pending);
                return;
            }
            decision = now(pending);
        } else {
            decision = blocking(httpRequest);
        }
        Admission admission = decision.admission();
        if (admission == null) {
            writeShed(httpResponse, decision.shedReason(), decision.retryAfterSeconds());
            return;
        }
        RequestPass pass = new RequestPass(this, admission, httpResponse);
        httpRequest.setAttribute(attribute, pass);
        pass.runChain(httpRequest, httpResponse, chain, false);
    }

    /**
     * Describes the filter.
     *
     * @return for example {@code "AdmissionFilter[shedStatus=503, AdmissionControl[...]]"}
     */
    @Override
    public String toString() {
        return "AdmissionFilter[shedStatus=" + shedStatus
                + (shedReasonHeader == null ? "" : ", shedReasonHeader=" + shedReasonHeader) + ", " + gate + "]";
    }

    // ------------------------------------------------------------------ internals

    /**
     * Suspends the request until its decision: the cycle starts, its listener (the pass) and the
     * decision's callback are in place before the container thread returns. The cycle's timeout
     * is raised above {@code maxWait} if it is shorter, so that the gate, not the container, times
     * the wait out.
     */
    private void suspend(HttpServletRequest request, HttpServletResponse response, CompletableFuture<Decision> pending)
            throws ServletException {
        AsyncContext cycle;
        try {
            cycle = request.startAsync(request, response);
        } catch (IllegalStateException e) {
            if (!pending.cancel(false)) { // decided meanwhile: give back what it granted
                pending.thenAccept(decision -> {
                    Admission admission = decision.admission();
                    if (admission != null) {
                        admission.release(Outcome.FAILURE);
                    }
                });
            }
            throw new ServletException("AdmissionFilter could not start an asynchronous cycle to wait in", e);
        }
        long timeout = cycle.getTimeout();
        if (timeout > 0 && timeout < cycleTimeoutMillis) {
            cycle.setTimeout(cycleTimeoutMillis);
        }
        RequestPass pass = new RequestPass(this, pending, response);
        request.setAttribute(attribute, pass);
        cycle.addListener(pass);
        pending.whenComplete((decision, failure) -> pass.decided(cycle, decision, failure));
    }

    private Decision blocking(HttpServletRequest request) throws ServletException {
        try {
            return gate.admitBlocking(request);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ServletException("AdmissionFilter: interrupted while waiting for admission; nothing held", e);
        } catch (CompletionException e) {
            throw new ServletException("AdmissionFilter: the admission control failed", e.getCause());
        }
    }

    private static Decision now(CompletableFuture<Decision> decided) throws ServletException {
        try {
            return decided.join();
        } catch (CompletionException e) {
            throw new ServletException("AdmissionFilter: the admission control failed", e.getCause());
        }
    }

    /** The outcome of a response with {@code status}: the configured one, never REJECTED or null. */
    Outcome outcomeOf(int status) {
        Outcome outcome = outcomes.apply(status);
        return outcome == null || outcome == Outcome.REJECTED ? Outcome.FAILURE : outcome;
    }

    /** The request attribute that marks a request this filter admitted (or is admitting). */
    String attribute() {
        return attribute;
    }

    /** Answers a shed request: the shed status, {@code Retry-After}, the reason if asked; no body. */
    void writeShed(HttpServletResponse response, @Nullable ShedReason reason, long retryAfterSeconds) {
        if (response.isCommitted()) {
            return;
        }
        response.resetBuffer();
        response.setStatus(shedStatus);
        response.setHeader("Retry-After", Long.toString(retryAfterSeconds));
        if (shedReasonHeader != null && reason != null) {
            response.setHeader(shedReasonHeader, reason.name());
        }
        response.setContentLength(0);
    }

    /** {@code Retry-After} for a request shed by the container's own timeout of its wait. */
    long retryAfterSeconds() {
        Duration hint = gate.retryAfter();
        return hint.getNano() > 0 ? hint.getSeconds() + 1 : hint.getSeconds();
    }

    private static long saturatedMillis(Duration d) {
        try {
            return Math.min(d.toMillis(), Long.MAX_VALUE - CYCLE_GRACE_MILLIS);
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE - CYCLE_GRACE_MILLIS;
        }
    }

    // ------------------------------------------------------------------ builder

    /**
     * The options of an {@link AdmissionFilter}; each has a default.
     */
    public static final class Builder {
        private final AdmissionControl<HttpServletRequest> gate;
        private int shedStatus = 503;
        private @Nullable String shedReasonHeader;
        private IntFunction<Outcome> outcomes = AdmissionFilter::defaultOutcome;

        private Builder(AdmissionControl<HttpServletRequest> gate) {
            this.gate = gate;
        }

        /**
         * Sets the status of a shed request's response: {@code 503 Service Unavailable} by default;
         * {@code 429 Too Many Requests} where the limit is per client (a key). The response carries
         * {@code Retry-After} whatever its status.
         *
         * @param status a client or server error status, 400 to 599
         * @return this builder
         * @throws IllegalArgumentException if {@code status} is outside that range
         */
        public Builder shedStatus(int status) {
            if (status < 400 || status > 599) {
                throw new IllegalArgumentException(
                        "shedStatus(" + status + "): a shed request gets an error status, 400 to 599");
            }
            this.shedStatus = status;
            return this;
        }

        /**
         * Names a response header that tells a shed request's client why it was shed: the
         * {@link ShedReason}'s name ({@code QUEUE_FULL}, {@code TIMED_OUT}, {@code COST_TOO_HIGH},
         * {@code CLOSED}). None by default.
         *
         * @param name the header's name, for example {@code "X-Shed-Reason"}
         * @return this builder
         * @throws NullPointerException if {@code name} is null
         * @throws IllegalArgumentException if {@code name} is blank
         */
        public Builder shedReasonHeader(String name) {
            if (name == null) {
                throw new NullPointerException("shedReasonHeader(null): the header name is null");
            }
            if (name.isBlank()) {
                throw new IllegalArgumentException("shedReasonHeader(\"" + name + "\"): the header name is blank");
            }
            this.shedReasonHeader = name;
            return this;
        }

        /**
         * Sets how the status of an admitted request's response counts for an adaptive limit:
         * {@link Outcome#SUCCESS}, {@link Outcome#FAILURE} or {@link Outcome#DROPPED}. A function
         * that returns {@code null} or {@link Outcome#REJECTED} (for requests never admitted)
         * counts as a failure. {@link AdmissionFilter#defaultOutcome(int)} by default; for
         * example {@code status -> status >= 500 ? Outcome.DROPPED : Outcome.SUCCESS} takes every
         * 5xx for overload. A request whose chain throws is counted by the adaptive limit's
         * classifier instead. With a fixed limit the outcome changes nothing.
         *
         * @param outcomes the outcome of a status; must not block or throw
         * @return this builder
         * @throws NullPointerException if {@code outcomes} is null
         */
        public Builder outcomes(IntFunction<Outcome> outcomes) {
            if (outcomes == null) {
                throw new NullPointerException("outcomes(null): the function is null");
            }
            this.outcomes = outcomes;
            return this;
        }

        /**
         * Builds the filter.
         *
         * @return a new filter
         */
        public AdmissionFilter build() {
            return new AdmissionFilter(this);
        }
    }
}
