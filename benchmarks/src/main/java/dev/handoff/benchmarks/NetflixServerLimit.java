// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import com.netflix.concurrency.limits.Limiter;
import com.netflix.concurrency.limits.limiter.AbstractLimiter;
import com.netflix.concurrency.limits.limiter.AbstractPartitionedLimiter;
import io.grpc.Context;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Netflix concurrency-limits in front of a gRPC server, as its {@code concurrency-limits-grpc}
 * module wires it ({@code ConcurrencyLimitServerInterceptor} over a limiter built by
 * {@code GrpcServerLimiterBuilder}), reproduced here over {@code concurrency-limits-core}: the
 * {@code -grpc} artifact of the same version is not available to this build. The limiters are
 * Netflix's own classes; only the interceptor's few lines of wiring are reproduced:
 *
 * <ul>
 *   <li>a call that is not unary passes untouched;
 *   <li>{@code limiter.acquire(context)}; empty: the call is closed at once with
 *       {@code UNAVAILABLE} ("Server concurrency limit reached"), its handler not run. There is no
 *       queue: a call is admitted or rejected on arrival;
 *   <li>admitted: the handler runs; the listener is completed once, whichever comes first: when
 *       the handler closes the call, {@code onDropped()} for {@code CANCELLED} or
 *       {@code DEADLINE_EXCEEDED}, {@code onSuccess()} for any other status (its time is a latency
 *       sample); {@code onIgnore()} when the call is cancelled, when the call's context is
 *       cancelled, or when the handler throws.
 * </ul>
 *
 * <p>The limiters: {@link #simple()} is what the builder gives without partitions, a
 * {@code SimpleLimiter} with the default limit (a {@code VegasLimit} starting at 20);
 * {@link #partitioned(Map)} gives each tenant (the {@link EdgeServer#TENANT} header) a guaranteed
 * fraction of the limit, as {@code partitionByHeader(...)} and {@code partition(name, percent)}
 * do: a tenant may go beyond its fraction while the total is below the limit, and is held to it
 * once the total reaches the limit.
 */
final class NetflixServerLimit implements ServerInterceptor {

    private static final Status LIMIT_REACHED = Status.UNAVAILABLE.withDescription("Server concurrency limit reached");

    private final Limiter<Metadata> limiter;
    private final Executor contextListeners;

    /**
     * @param limiter the limiter; its context is the call's headers
     * @param contextListeners where the context's cancellation listener runs
     */
    NetflixServerLimit(Limiter<Metadata> limiter, Executor contextListeners) {
        this.limiter = limiter;
        this.contextListeners = contextListeners;
    }

    /** {@code AbstractPartitionedLimiter}'s builder with a context of headers, as the gRPC module's. */
    static final class Builder extends AbstractPartitionedLimiter.Builder<Builder, Metadata> {
        @Override
        protected Builder self() {
            return this;
        }
    }

    /** @return a {@code SimpleLimiter} with Netflix's defaults */
    static Limiter<Metadata> simple() {
        return new Builder().build();
    }

    /**
     * @param fractions each tenant's guaranteed fraction of the limit (at most 1 in total)
     * @return a partitioned limiter with Netflix's default limit, partitioned by the tenant header
     */
    static Limiter<Metadata> partitioned(Map<String, Double> fractions) {
        Builder builder = new Builder().partitionResolver(headers -> headers.get(EdgeServer.TENANT));
        fractions.forEach(builder::partition);
        return builder.build();
    }

    /** @return the limiter's present limit */
    int limit() {
        return ((AbstractLimiter<?>) limiter).getLimit();
    }

    /** @return the calls the limiter counts as in flight */
    int inFlight() {
        return ((AbstractLimiter<?>) limiter).getInflight();
    }

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
            ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
        if (!call.getMethodDescriptor().getType().clientSendsOneMessage()
                || !call.getMethodDescriptor().getType().serverSendsOneMessage()) {
            return next.startCall(call, headers);
        }
        Optional<Limiter.Listener> acquired = limiter.acquire(headers);
        if (acquired.isEmpty()) {
            call.close(LIMIT_REACHED, new Metadata());
            return new ServerCall.Listener<>() {};
        }
        Limiter.Listener listener = acquired.get();
        AtomicBoolean completed = new AtomicBoolean();
        Runnable ignore = () -> {
            if (completed.compareAndSet(false, true)) {
                listener.onIgnore();
            }
        };
        Context.current().addListener(context -> ignore.run(), contextListeners);
        ServerCall<ReqT, RespT> completing = new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            public void close(Status status, Metadata trailers) {
                try {
                    super.close(status, trailers);
                } finally {
                    if (completed.compareAndSet(false, true)) {
                        if (status.getCode() == Status.Code.CANCELLED
                                || status.getCode() == Status.Code.DEADLINE_EXCEEDED) {
                            listener.onDropped();
                        } else {
                            listener.onSuccess();
                        }
                    }
                }
            }
        };
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(
                next.startCall(completing, headers)) {
            @Override
            public void onMessage(ReqT message) {
                try {
                    super.onMessage(message);
                } catch (RuntimeException | Error e) {
                    ignore.run();
                    throw e;
                }
            }

            @Override
            public void onHalfClose() {
                try {
                    super.onHalfClose();
                } catch (RuntimeException | Error e) {
                    ignore.run();
                    throw e;
                }
            }

            @Override
            public void onCancel() {
                try {
                    super.onCancel();
                } finally {
                    ignore.run();
                }
            }
        };
    }
}
