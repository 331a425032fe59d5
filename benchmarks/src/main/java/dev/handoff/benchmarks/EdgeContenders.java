// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Semaphore;
import dev.handoff.adaptive.AdaptiveFairShare;
import dev.handoff.edge.AdmissionControl;
import dev.handoff.grpc.AdmissionInterceptor;
import dev.handoff.grpc.GrpcRequest;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.DoubleSupplier;
import java.util.function.Function;

/**
 * The contenders of the edge benchmark ({@link EdgeBenchmark}): what stands between the clients
 * and the server with a knee. Every fixed limit is set at the knee ({@link EdgeBenchmark.Settings#knee()}
 * calls in flight), which an operator would have to know; Netflix's limiters use their default
 * limit, which starts at 20 (the knee of the default settings), and handoff's adaptive capacity
 * starts at the knee too and sizes itself from there.
 */
final class EdgeContenders {

    private EdgeContenders() {}

    /**
     * One contender, built afresh for every run.
     *
     * @param name its name in the table and the chart
     * @param build given the settings and the server's executor, the limit in front of the server
     */
    record Contender(String name, java.util.function.BiFunction<EdgeBenchmark.Settings, Executor, Built> build) {}

    /**
     * A built contender.
     *
     * @param interceptor the server interceptor, null for none
     * @param permitsBack whether every permit it handed out is back (asked once the run has drained)
     * @param limit its present limit, NaN if it has none to report
     */
    record Built(ServerInterceptor interceptor, BooleanSupplier permitsBack, DoubleSupplier limit) {}

    static final String NO_LIMIT = "no limit";
    static final String JUC = "java.util.concurrent.Semaphore (tryAcquire)";
    static final String NETFLIX = "Netflix SimpleLimiter (default: Vegas)";
    static final String NETFLIX_PARTITIONED = "Netflix limiter, partitioned 50/50 by tenant";
    static final String FIFO = "handoff AdmissionInterceptor, FIFO Semaphore";
    static final String KEYED = "handoff AdmissionInterceptor, keyed by tenant";
    static final String ADAPTIVE = "handoff AdmissionInterceptor, keyed + adaptive";

    /** @return every contender, in the table's order */
    static List<Contender> all() {
        return List.of(
                new Contender(NO_LIMIT, (s, e) -> new Built(null, () -> true, () -> Double.NaN)),
                new Contender(JUC, (s, e) -> {
                    java.util.concurrent.Semaphore semaphore = new java.util.concurrent.Semaphore(s.knee());
                    return new Built(
                            new JucSemaphoreLimit(semaphore),
                            () -> semaphore.availablePermits() == s.knee(),
                            () -> s.knee());
                }),
                new Contender(NETFLIX, (s, e) -> netflix(new NetflixServerLimit(NetflixServerLimit.simple(), e))),
                new Contender(
                        NETFLIX_PARTITIONED,
                        (s, e) -> netflix(new NetflixServerLimit(
                                NetflixServerLimit.partitioned(
                                        Map.of(EdgeBenchmark.POLITE, 0.5, EdgeBenchmark.NOISY, 0.5)),
                                e))),
                new Contender(FIFO, (s, e) -> {
                    Semaphore semaphore = Semaphore.builder(s.knee()).build();
                    AdmissionControl<GrpcRequest> gate = AdmissionControl.<GrpcRequest>builder()
                            .limiter(semaphore)
                            .maxWait(s.maxWait())
                            .build();
                    return new Built(
                            handoff(gate, e),
                            () -> semaphore.availablePermits() == semaphore.capacity(),
                            () -> semaphore.capacity());
                }),
                new Contender(KEYED, (s, e) -> {
                    FairShareSemaphore<String> tenants =
                            FairShareSemaphore.<String>builder(s.knee()).build();
                    AdmissionControl<GrpcRequest> gate = AdmissionControl.<GrpcRequest>builder()
                            .limiter(EdgeContenders::tenant, tenants)
                            .maxWait(s.maxWait())
                            .build();
                    return new Built(
                            handoff(gate, e),
                            () -> tenants.availablePermits() == tenants.capacity(),
                            () -> tenants.capacity());
                }),
                new Contender(ADAPTIVE, (s, e) -> {
                    FairShareSemaphore<String> tenants =
                            FairShareSemaphore.<String>builder(s.knee()).build();
                    AdaptiveFairShare<String> adaptive =
                            AdaptiveFairShare.builder(tenants).build();
                    AdmissionControl<GrpcRequest> gate = AdmissionControl.<GrpcRequest>builder()
                            .limiter(EdgeContenders::tenant, adaptive)
                            .maxWait(s.maxWait())
                            .build();
                    return new Built(
                            handoff(gate, e),
                            () -> adaptive.inFlight() == 0 && tenants.availablePermits() == tenants.capacity(),
                            () -> adaptive.capacity());
                }));
    }

    /** @return the contenders whose name is one of {@code names}, in the table's order; all if none named */
    static List<Contender> named(List<String> names) {
        if (names.isEmpty()) {
            return all();
        }
        return all().stream().filter(c -> names.contains(c.name())).toList();
    }

    private static String tenant(GrpcRequest request) {
        return Objects.requireNonNullElse(request.header(EdgeServer.TENANT.name()), "anonymous");
    }

    private static ServerInterceptor handoff(AdmissionControl<GrpcRequest> gate, Executor executor) {
        return AdmissionInterceptor.builder(gate).executor(executor).build();
    }

    private static Built netflix(NetflixServerLimit limit) {
        return new Built(limit, () -> limit.inFlight() == 0, limit::limit);
    }

    /**
     * A fixed {@link java.util.concurrent.Semaphore} as a server interceptor: {@code tryAcquire()}
     * or the call is closed with {@code UNAVAILABLE} at once; the permit is given back once,
     * when the handler closes the call, when the call is cancelled or completes, or when the
     * handler throws. What one would write by hand with the JDK alone.
     */
    static final class JucSemaphoreLimit implements ServerInterceptor {
        private final java.util.concurrent.Semaphore semaphore;

        JucSemaphoreLimit(java.util.concurrent.Semaphore semaphore) {
            this.semaphore = semaphore;
        }

        @Override
        public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
                ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
            if (!semaphore.tryAcquire()) {
                call.close(Status.UNAVAILABLE.withDescription("limit reached"), new Metadata());
                return new ServerCall.Listener<>() {};
            }
            AtomicBoolean released = new AtomicBoolean();
            Runnable release = () -> {
                if (released.compareAndSet(false, true)) {
                    semaphore.release();
                }
            };
            ServerCall<ReqT, RespT> releasing = new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
                @Override
                public void close(Status status, Metadata trailers) {
                    try {
                        super.close(status, trailers);
                    } finally {
                        release.run();
                    }
                }
            };
            ServerCall.Listener<ReqT> listener;
            try {
                listener = next.startCall(releasing, headers);
            } catch (RuntimeException | Error e) {
                release.run();
                throw e;
            }
            return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
                @Override
                public void onHalfClose() {
                    guarded(super::onHalfClose);
                }

                @Override
                public void onMessage(ReqT message) {
                    guarded(() -> super.onMessage(message));
                }

                @Override
                public void onCancel() {
                    try {
                        super.onCancel();
                    } finally {
                        release.run();
                    }
                }

                @Override
                public void onComplete() {
                    try {
                        super.onComplete();
                    } finally {
                        release.run();
                    }
                }

                private void guarded(Runnable event) {
                    try {
                        event.run();
                    } catch (RuntimeException | Error e) {
                        release.run();
                        throw e;
                    }
                }
            };
        }
    }

    /** For the chart's colours: the position of a contender in {@link #all()}. */
    static final Function<String, Integer> INDEX = name -> {
        List<Contender> all = all();
        for (int i = 0; i < all.size(); i++) {
            if (all.get(i).name().equals(name)) {
                return i;
            }
        }
        return all.size();
    };
}
