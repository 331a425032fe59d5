// SPDX-License-Identifier: Apache-2.0
package dev.handoff.grpc;

import dev.handoff.adaptive.Outcome;
import dev.handoff.edge.Admission;
import dev.handoff.edge.AdmissionControl;
import dev.handoff.edge.Decision;
import dev.handoff.edge.ShedReason;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Deadline;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Admission control for a gRPC server: every call takes its permits from an
 * {@link AdmissionControl} before its handler runs and gives them back exactly once when the call
 * ends, however it ends: closed by the handler ({@link ServerCall#close}), completed, cancelled by
 * the client, by its deadline or by a disconnect, or failed by a handler that threw. A
 * server-streaming or bidirectional call holds its permits until it closes.
 *
 * <p>A call whose permits are not free waits in the gate's queue (fair across keys with a key, at
 * most the gate's {@code maxWait}) without holding a thread: the interceptor returns a listener
 * that holds the call's events, and starts the handler on the {@linkplain Builder#executor
 * executor} once the permits are granted. A call cancelled while it waits withdraws its wait; no
 * permit is lost or made, even if the grant arrives at that instant. A call admitted at once starts
 * on the server's own thread, as without the interceptor.
 *
 * <p>A shed call (see {@link ShedReason}) is closed with {@code RESOURCE_EXHAUSTED} (or the
 * {@linkplain Builder#shedStatus status} set), a description naming the reason, and the trailer
 * {@link #RETRY_PUSHBACK_MS} carrying the gate's {@code retryAfter}; its handler never runs.
 *
 * <p>With an adaptive limit, each release tells it how the call ended, from the call's
 * {@link Status} ({@link #defaultOutcome(Status)}, or {@link Builder#outcome}).
 *
 * <pre>{@code
 * AdmissionControl<GrpcRequest> gate = AdmissionControl.<GrpcRequest>builder()
 *         .capacity(32)
 *         .key(r -> Objects.requireNonNullElse(r.header("x-tenant"), "anonymous"), tenant -> 1)
 *         .maxWait(Duration.ofMillis(200))
 *         .build();
 * Server server = NettyServerBuilder.forPort(8080)
 *         .addService(ServerInterceptors.intercept(service, AdmissionInterceptor.of(gate)))
 *         .build()
 *         .start();
 * }</pre>
 *
 * <p>Thread-safe; one interceptor may serve every service of a server.
 */
public final class AdmissionInterceptor implements ServerInterceptor {

    /**
     * The trailer of a shed call: milliseconds the client should wait before it tries again (the
     * gate's {@code retryAfter}). A gRPC client with a retry policy waits that long before its next
     * attempt.
     */
    public static final Metadata.Key<String> RETRY_PUSHBACK_MS =
            Metadata.Key.of("grpc-retry-pushback-ms", Metadata.ASCII_STRING_MARSHALLER);

    /**
     * A cancel this close to the call's deadline counts as the deadline's: the client counts the
     * deadline from when it sent the call, the server from when it received it, a little later.
     */
    private static final long DEADLINE_SLACK_MILLIS = 50;

    /** Where calls admitted after a wait start by default: a cached pool of daemon threads. */
    private static final class DefaultExecutor {
        static final ExecutorService EXECUTOR = Executors.newCachedThreadPool(new java.util.concurrent.ThreadFactory() {
            private final AtomicInteger count = new AtomicInteger();

            @Override
            public Thread newThread(Runnable task) {
                Thread thread = new Thread(task, "handoff-grpc-admitted-" + count.incrementAndGet());
                thread.setDaemon(true);
                return thread;
            }
        });
    }

    private static final ServerCall.Listener<Object> NOTHING = new ServerCall.Listener<>() {};

    private final AdmissionControl<GrpcRequest> gate;
    private final Status.Code shedCode;
    private final Function<? super Status, Outcome> outcomes;
    private final @Nullable Executor executor;

    private AdmissionInterceptor(Builder builder) {
        this.gate = builder.gate;
        this.shedCode = builder.shedCode;
        this.outcomes = builder.outcomes;
        this.executor = builder.executor;
    }

    /**
     * Returns an interceptor over {@code gate} with the defaults: shed calls closed with
     * {@code RESOURCE_EXHAUSTED}, outcomes by {@link #defaultOutcome(Status)}, calls admitted after
     * a wait started on a shared cached pool.
     *
     * <pre>{@code
     * ServerInterceptors.intercept(service, AdmissionInterceptor.of(gate))
     * }</pre>
     *
     * @param gate the gate every call passes
     * @return a new interceptor
     * @throws NullPointerException if {@code gate} is null
     */
    public static AdmissionInterceptor of(AdmissionControl<GrpcRequest> gate) {
        return builder(gate).build();
    }

    /**
     * Starts a builder of an interceptor over {@code gate}.
     *
     * <pre>{@code
     * AdmissionInterceptor interceptor = AdmissionInterceptor.builder(gate)
     *         .shedStatus(Status.Code.UNAVAILABLE)
     *         .executor(serverExecutor)
     *         .build();
     * }</pre>
     *
     * @param gate the gate every call passes
     * @return a new builder
     * @throws NullPointerException if {@code gate} is null
     */
    public static Builder builder(AdmissionControl<GrpcRequest> gate) {
        if (gate == null) {
            throw new NullPointerException("builder(null): the gate is null");
        }
        return new Builder(gate);
    }

    /**
     * Returns the gate the calls pass: its {@code shedCount(reason)}, its {@code primitive()} for
     * metrics, its {@code closeAsync()} to drain before shutdown.
     *
     * @return the gate
     */
    public AdmissionControl<GrpcRequest> gate() {
        return gate;
    }

    /**
     * The default outcome of a call that ended with {@code status}, as an adaptive limit counts
     * it: {@link Outcome#DROPPED} (overload: shrinks the capacity) for {@code DEADLINE_EXCEEDED},
     * which is also the status given for a call cancelled at its deadline (or less than 50 ms
     * before it: the client counts the deadline from when it sent the call); {@link Outcome#FAILURE} (not a
     * latency sample) for {@code UNAVAILABLE}, {@code INTERNAL}, {@code UNKNOWN} (a handler that
     * threw) and {@code CANCELLED} (a client that went away before its deadline);
     * {@link Outcome#SUCCESS} (its time is a latency sample) for {@code OK} and every other code,
     * which is the handler's answer ({@code NOT_FOUND}, {@code INVALID_ARGUMENT}, ...).
     *
     * @param status how the call ended
     * @return its outcome: {@code SUCCESS}, {@code FAILURE} or {@code DROPPED}
     * @throws NullPointerException if {@code status} is null
     */
    public static Outcome defaultOutcome(Status status) {
        switch (status.getCode()) {
            case DEADLINE_EXCEEDED:
                return Outcome.DROPPED;
            case CANCELLED:
            case UNAVAILABLE:
            case INTERNAL:
            case UNKNOWN:
                return Outcome.FAILURE;
            default:
                return Outcome.SUCCESS;
        }
    }

    /**
     * Admits the call or sheds it, as described in the class documentation. Called by gRPC for
     * every call of the services it intercepts.
     *
     * @param call the call
     * @param headers its request headers
     * @param next the rest of the chain: the handler
     * @param <ReqT> the request message type
     * @param <RespT> the response message type
     * @return the call's listener
     * @throws NullPointerException if the gate's key function returns null for the call
     * @throws IllegalArgumentException if the gate's cost function returns less than 1
     */
    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
            ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
        Context context = Context.current();
        CompletableFuture<Decision> decision = gate.admitAsync(new GrpcRequest(call, headers));
        if (decision.isDone()) {
            Decision d = decided(decision);
            Admission admission = d == null ? null : d.admission();
            if (admission == null) {
                end(call, d);
                return nothing();
            }
            Held held = new Held(admission, context);
            ServerCall.Listener<ReqT> listener;
            try {
                listener = next.startCall(new AdmittedCall<>(call, held), headers);
            } catch (RuntimeException | Error e) {
                held.end(Status.fromThrowable(e));
                throw e;
            }
            return new AdmittedListener<>(listener, held);
        }
        Waiting<ReqT, RespT> waiting = new Waiting<>(call, headers, next, context, decision);
        decision.whenComplete((d, failure) -> waiting.schedule());
        return waiting;
    }

    /**
     * Describes the interceptor.
     *
     * @return for example {@code "AdmissionInterceptor[shedStatus=RESOURCE_EXHAUSTED, gate=...]"}
     */
    @Override
    public String toString() {
        return "AdmissionInterceptor[shedStatus=" + shedCode + ", gate=" + gate + "]";
    }

    // ------------------------------------------------------------------ internals

    @SuppressWarnings("unchecked") // a listener that ignores every event suits every message type
    private static <ReqT> ServerCall.Listener<ReqT> nothing() {
        return (ServerCall.Listener<ReqT>) NOTHING;
    }

    /** The decision of a completed future, or null if it failed (or was cancelled). */
    private static @Nullable Decision decided(CompletableFuture<Decision> decision) {
        try {
            return decision.join();
        } catch (CompletionException | java.util.concurrent.CancellationException e) {
            return null;
        }
    }

    /** Closes a call that was not admitted: shed with the reason, or failed by the gate itself. */
    private void end(ServerCall<?, ?> call, @Nullable Decision d) {
        ShedReason reason = d == null ? null : d.shedReason();
        if (d == null || reason == null) {
            call.close(Status.INTERNAL.withDescription("handoff admission: the gate failed to decide"), new Metadata());
            return;
        }
        Metadata trailers = new Metadata();
        trailers.put(RETRY_PUSHBACK_MS, Long.toString(pushbackMillis(d)));
        call.close(
                Status.fromCode(shedCode)
                        .withDescription("handoff admission: shed, " + reason + ": " + explain(reason)
                                + "; retry after " + pushbackMillis(d) + " ms"),
                trailers);
    }

    private String explain(ShedReason reason) {
        switch (reason) {
            case QUEUE_FULL:
                return gate.maxWait().isZero() ? "no permits free and maxWait is zero" : "the admission queue is full";
            case TIMED_OUT:
                return "no permits within maxWait " + gate.maxWait();
            case COST_TOO_HIGH:
                return "the call costs more permits than the limit can grant";
            default:
                return "the gate is closed";
        }
    }

    private static long pushbackMillis(Decision d) {
        try {
            return Math.min(d.retryAfter().toMillis(), Integer.MAX_VALUE); // clients parse an int
        } catch (ArithmeticException e) {
            return Integer.MAX_VALUE;
        }
    }

    private void execute(Context context, Runnable task) {
        Runnable inContext = context.wrap(task);
        Executor chosen = executor != null ? executor : DefaultExecutor.EXECUTOR;
        try {
            chosen.execute(inContext);
        } catch (RejectedExecutionException e) {
            inContext.run(); // the executor is shutting down: settle the call here rather than never
        }
    }

    /** The permits of one admitted call and how to tell the limit the call's outcome, once. */
    private final class Held {
        private final Admission admission;
        private final Context context;

        Held(Admission admission, Context context) {
            this.admission = admission;
            this.context = context;
        }

        void end(Status status) {
            if (admission.isReleased()) {
                return;
            }
            Outcome outcome;
            try {
                outcome = outcomes.apply(status);
            } catch (RuntimeException | Error e) {
                admission.release(Outcome.FAILURE);
                throw e;
            }
            if (outcome == null || outcome == Outcome.REJECTED) {
                admission.release(Outcome.FAILURE);
                throw new IllegalStateException("outcome(..) returned " + outcome + " for " + status.getCode()
                        + "; it must return SUCCESS, FAILURE or DROPPED");
            }
            admission.release(outcome);
        }

        /** The status of a call cancelled before it closed: at its deadline, or by the client. */
        void cancelled() {
            Deadline deadline = context.getDeadline();
            boolean atDeadline =
                    deadline != null && deadline.timeRemaining(TimeUnit.MILLISECONDS) < DEADLINE_SLACK_MILLIS
                            || context.isCancelled()
                                    && Contexts.statusFromCancelled(context).getCode() == Status.Code.DEADLINE_EXCEEDED;
            end(
                    atDeadline
                            ? Status.DEADLINE_EXCEEDED.withDescription("the call was cancelled at its deadline")
                            : Status.CANCELLED.withDescription("the call was cancelled"));
        }
    }

    /** The admitted call: its close releases the permits, before the status goes out. */
    private static final class AdmittedCall<ReqT, RespT>
            extends ForwardingServerCall.SimpleForwardingServerCall<ReqT, RespT> {
        private final Held held;

        AdmittedCall(ServerCall<ReqT, RespT> call, Held held) {
            super(call);
            this.held = held;
        }

        @Override
        public void close(Status status, Metadata trailers) {
            try {
                held.end(status);
            } finally {
                super.close(status, trailers);
            }
        }
    }

    /** The admitted call's listener: its end releases the permits, as does a handler that throws. */
    private static final class AdmittedListener<ReqT>
            extends ForwardingServerCallListener.SimpleForwardingServerCallListener<ReqT> {
        private final Held held;

        AdmittedListener(ServerCall.Listener<ReqT> delegate, Held held) {
            super(delegate);
            this.held = held;
        }

        @Override
        public void onMessage(ReqT message) {
            try {
                super.onMessage(message);
            } catch (RuntimeException | Error e) {
                held.end(Status.fromThrowable(e));
                throw e;
            }
        }

        @Override
        public void onHalfClose() {
            try {
                super.onHalfClose();
            } catch (RuntimeException | Error e) {
                held.end(Status.fromThrowable(e));
                throw e;
            }
        }

        @Override
        public void onReady() {
            try {
                super.onReady();
            } catch (RuntimeException | Error e) {
                held.end(Status.fromThrowable(e));
                throw e;
            }
        }

        @Override
        public void onCancel() {
            try {
                held.cancelled();
            } finally {
                super.onCancel();
            }
        }

        @Override
        public void onComplete() {
            try {
                held.end(Status.OK);
            } finally {
                super.onComplete();
            }
        }
    }

    /**
     * The listener of a call waiting for its permits. It holds the call's events until the handler
     * starts, then replays them to the handler's listener and passes the later ones straight
     * through. A cancel before the start withdraws the wait.
     */
    private final class Waiting<ReqT, RespT> extends ServerCall.Listener<ReqT> {
        private final ServerCall<ReqT, RespT> call;
        private final Metadata headers;
        private final ServerCallHandler<ReqT, RespT> next;
        private final Context context;
        private final CompletableFuture<Decision> decision;

        // Guarded by this.
        private List<Runnable> events = new ArrayList<>();
        private boolean started; // the handler is starting or started: events go to it
        private boolean passThrough; // the held events are replayed: later ones go straight through
        private boolean ended; // the call ended before its handler started, or was closed here
        private ServerCall.@Nullable Listener<ReqT> listener;

        Waiting(
                ServerCall<ReqT, RespT> call,
                Metadata headers,
                ServerCallHandler<ReqT, RespT> next,
                Context context,
                CompletableFuture<Decision> decision) {
            this.call = call;
            this.headers = headers;
            this.next = next;
            this.context = context;
            this.decision = decision;
        }

        /** The decision is in: settle the call on the executor, never on the granting thread. */
        void schedule() {
            execute(context, this::settle);
        }

        private void settle() {
            Decision d = decided(decision);
            Admission admission = d == null ? null : d.admission();
            synchronized (this) {
                if (ended) { // cancelled while the grant was on its way
                    if (admission != null) {
                        admission.release(Outcome.FAILURE);
                    }
                    return;
                }
                if (admission == null) {
                    ended = true;
                } else {
                    started = true;
                }
            }
            if (admission == null) {
                end(call, d);
                return;
            }
            Held held = new Held(admission, context);
            try {
                ServerCall.Listener<ReqT> handler = next.startCall(new AdmittedCall<>(call, held), headers);
                synchronized (this) {
                    listener = new AdmittedListener<>(handler, held);
                }
            } catch (RuntimeException | Error e) {
                held.end(Status.fromThrowable(e));
                fail(e);
                return;
            }
            replay();
        }

        /** Replays the held events until none is left, then lets the later ones through. */
        private void replay() {
            while (true) {
                List<Runnable> batch;
                synchronized (this) {
                    if (ended) {
                        return;
                    }
                    if (events.isEmpty()) {
                        passThrough = true;
                        return;
                    }
                    batch = events;
                    events = new ArrayList<>();
                }
                for (Runnable event : batch) {
                    try {
                        event.run();
                    } catch (RuntimeException | Error e) { // the admitted listener released already
                        fail(e);
                        return;
                    }
                }
            }
        }

        /** A handler that threw where gRPC cannot see it: close the call as gRPC would. */
        private void fail(Throwable e) {
            synchronized (this) {
                ended = true;
                events.clear();
            }
            try {
                call.close(
                        Status.UNKNOWN
                                .withDescription("Application error processing RPC")
                                .withCause(e),
                        new Metadata());
            } catch (IllegalStateException alreadyClosed) {
                // the handler closed the call before it threw
            }
        }

        private void deliver(Runnable event) {
            synchronized (this) {
                if (ended) {
                    return;
                }
                if (!passThrough) {
                    events.add(event);
                    return;
                }
            }
            event.run();
        }

        private ServerCall.Listener<ReqT> listener() {
            ServerCall.Listener<ReqT> l;
            synchronized (this) {
                l = listener;
            }
            if (l == null) {
                throw new IllegalStateException("no listener while passing events through");
            }
            return l;
        }

        /** The call ended (cancelled, or completed) before its handler started: withdraw the wait. */
        private boolean endedWaiting() {
            synchronized (this) {
                if (started || ended) {
                    return false;
                }
                ended = true;
            }
            decision.cancel(false); // a grant racing this goes back: settle() sees ended
            return true;
        }

        @Override
        public void onMessage(ReqT message) {
            deliver(() -> listener().onMessage(message));
        }

        @Override
        public void onHalfClose() {
            deliver(() -> listener().onHalfClose());
        }

        @Override
        public void onReady() {
            deliver(() -> listener().onReady());
        }

        @Override
        public void onCancel() {
            if (!endedWaiting()) {
                deliver(() -> listener().onCancel());
            }
        }

        @Override
        public void onComplete() {
            if (!endedWaiting()) {
                deliver(() -> listener().onComplete());
            }
        }
    }

    // ------------------------------------------------------------------ builder

    /**
     * Configures an {@link AdmissionInterceptor}; every setting has a default.
     */
    public static final class Builder {
        private final AdmissionControl<GrpcRequest> gate;
        private Status.Code shedCode = Status.Code.RESOURCE_EXHAUSTED;
        private Function<? super Status, Outcome> outcomes = AdmissionInterceptor::defaultOutcome;
        private @Nullable Executor executor;

        private Builder(AdmissionControl<GrpcRequest> gate) {
            this.gate = gate;
        }

        /**
         * Sets the status a shed call is closed with. {@code RESOURCE_EXHAUSTED} by default;
         * {@code UNAVAILABLE} makes clients with a retry policy retry the call (after the
         * {@link #RETRY_PUSHBACK_MS} pushback), which suits a replicated service.
         *
         * @param code the status code, not {@code OK}
         * @return this builder
         * @throws NullPointerException if {@code code} is null
         * @throws IllegalArgumentException if {@code code} is {@code OK}
         */
        public Builder shedStatus(Status.Code code) {
            if (code == null) {
                throw new NullPointerException("shedStatus(null): the status code is null");
            }
            if (code == Status.Code.OK) {
                throw new IllegalArgumentException("shedStatus(OK): a shed call did not succeed;"
                        + " use RESOURCE_EXHAUSTED (the default) or UNAVAILABLE");
            }
            this.shedCode = code;
            return this;
        }

        /**
         * Sets how a call's final status counts for an adaptive limit: {@link Outcome#SUCCESS},
         * {@link Outcome#FAILURE} or {@link Outcome#DROPPED}. A call cancelled at its deadline is
         * given as {@code DEADLINE_EXCEEDED}, one cancelled before it as {@code CANCELLED}, one whose
         * handler threw as {@code Status.fromThrowable(thrown)}. {@link #defaultOutcome(Status)} by
         * default; a fixed limit ignores the outcome.
         *
         * <pre>{@code
         * .outcome(s -> s.getCode() == Status.Code.RESOURCE_EXHAUSTED
         *         ? Outcome.DROPPED
         *         : AdmissionInterceptor.defaultOutcome(s))
         * }</pre>
         *
         * @param outcome the outcome of a status; must not block, must not return null or
         *     {@code REJECTED} (the call's permits are then released as a failure and the call
         *     throws {@link IllegalStateException})
         * @return this builder
         * @throws NullPointerException if {@code outcome} is null
         */
        public Builder outcome(Function<? super Status, Outcome> outcome) {
            if (outcome == null) {
                throw new NullPointerException("outcome(null): the outcome function is null");
            }
            this.outcomes = outcome;
            return this;
        }

        /**
         * Sets where a call admitted after a wait starts its handler (the permits are granted on
         * the thread that released them, or the gate's timer, where no handler should run). Pass
         * the executor given to {@code ServerBuilder.executor(..)} to keep every handler on it. A
         * shared cached pool of daemon threads by default. A call admitted at once starts on the
         * server's thread, as without the interceptor.
         *
         * @param executor the executor
         * @return this builder
         * @throws NullPointerException if {@code executor} is null
         */
        public Builder executor(Executor executor) {
            if (executor == null) {
                throw new NullPointerException("executor(null): the executor is null");
            }
            this.executor = executor;
            return this;
        }

        /**
         * Builds the interceptor.
         *
         * @return a new interceptor
         */
        public AdmissionInterceptor build() {
            return new AdmissionInterceptor(this);
        }
    }
}
