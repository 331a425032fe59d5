// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Semaphore;
import dev.handoff.edge.AdmissionControl;
import dev.handoff.grpc.AdmissionInterceptor;
import dev.handoff.grpc.GrpcRequest;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import java.util.function.ToLongFunction;

/**
 * Sample 21: a noisy tenant kept off a polite tenant's back, over real gRPC (Netty, port 0).
 *
 * <p>One service of {@link #CAPACITY} calls in flight, each taking about 5 ms, behind an
 * {@link AdmissionInterceptor}. The noisy tenant sends {@link #NOISY_CALLS} calls at once; while its
 * backlog waits, the polite tenant sends {@link #POLITE_CALLS} calls one after the other. For each
 * polite call the server counts how many noisy calls started between its arrival and its start:
 * the noisy calls that went before it. With a gate keyed by the {@code x-tenant} header (a
 * {@link FairShareSemaphore}), only a handful do: those already granted or starting as it arrived,
 * or starting while its own handler is being started, and about one more; with a
 * plain FIFO gate, the first polite call waits behind the whole backlog. Every call is answered and
 * every permit comes back. It checks these and fails if they do not hold.
 */
public final class GrpcNoisyTenantSample {

    static final int CAPACITY = 4;
    static final int NOISY_CALLS = 300;
    static final int POLITE_CALLS = 10;

    /** What one run measured: the noisy calls that overtook each polite call, and the totals. */
    public record Run(List<Long> overtaken, int answered, long availableAfter, long politeMaxMillis) {
        long maxOvertaken() {
            return overtaken.stream().mapToLong(Long::longValue).max().orElse(0);
        }
    }

    /** The keyed run and the FIFO run. */
    public record Figures(Run fair, Run fifo) {}

    private static final MethodDescriptor.Marshaller<String> STRING = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(String value) {
            return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String parse(InputStream stream) {
            try {
                return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };

    static final MethodDescriptor<String, String> WORK = MethodDescriptor.<String, String>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName("demo.Backend/Work")
            .setRequestMarshaller(STRING)
            .setResponseMarshaller(STRING)
            .build();

    private GrpcNoisyTenantSample() {}

    /** Runs the flood against a keyed gate and a FIFO gate, checks the invariants, returns the figures. */
    public static Figures run() throws IOException, InterruptedException {
        Figures f = new Figures(flood(true), flood(false));
        check(f);
        return f;
    }

    /** The sample's invariants: it fails loudly rather than print figures that do not hold. */
    static void check(Figures f) {
        for (Run r : List.of(f.fair(), f.fifo())) {
            if (r.answered() != NOISY_CALLS + POLITE_CALLS || r.availableAfter() != CAPACITY) {
                throw new IllegalStateException("calls lost or permits leaked: " + r);
            }
        }
        // Counted at the handlers' starts, a polite call's figure includes the noisy calls already
        // granted, or granted while its own handler is being started: a handful, however loaded the
        // host, against the whole backlog behind a FIFO gate.
        if (f.fair().maxOvertaken() * 10 > f.fifo().overtaken().get(0)) {
            throw new IllegalStateException("the keyed gate let the noisy tenant go before the polite one: " + f.fair()
                    + " against FIFO " + f.fifo());
        }
        if (f.fifo().overtaken().get(0) < NOISY_CALLS / 3) {
            throw new IllegalStateException(
                    "the FIFO gate should have queued the polite call behind the flood: " + f.fifo());
        }
    }

    private static Run flood(boolean keyed) throws IOException, InterruptedException {
        AtomicLong noisyStarts = new AtomicLong();
        Map<String, Long> arrivals = new ConcurrentHashMap<>();
        List<Long> overtaken = Collections.synchronizedList(new ArrayList<>());
        // The cost function runs as the call joins the gate's queue: it notes, for a polite call,
        // how many noisy calls had started by then.
        ToLongFunction<GrpcRequest> stamp = r -> {
            String id = r.header("x-call");
            if (id != null) {
                arrivals.put(id, noisyStarts.get());
            }
            return 1;
        };
        FairShareSemaphore<String> tenants =
                FairShareSemaphore.<String>builder(CAPACITY).build();
        Semaphore fifo = Semaphore.builder(CAPACITY).build();
        AdmissionControl.Builder<GrpcRequest> builder =
                AdmissionControl.<GrpcRequest>builder().cost(stamp).maxWait(Duration.ofSeconds(30));
        AdmissionControl<GrpcRequest> gate = keyed
                ? builder.limiter(r -> Objects.requireNonNullElse(r.header("x-tenant"), "anonymous"), tenants)
                        .build()
                : builder.limiter(fifo).build();
        LongSupplier available = keyed ? tenants::availablePermits : fifo::availablePermits;
        ServerServiceDefinition backend = ServerServiceDefinition.builder("demo.Backend")
                .addMethod(WORK, ServerCalls.asyncUnaryCall((String request, StreamObserver<String> out) -> {
                    if (request.startsWith("noisy")) {
                        noisyStarts.incrementAndGet();
                    } else {
                        overtaken.add(noisyStarts.get() - arrivals.get(request));
                    }
                    LockSupport.parkNanos(5_000_000); // the work
                    out.onNext(request);
                    out.onCompleted();
                }))
                .build();
        Server server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                .addService(ServerInterceptors.intercept(backend, AdmissionInterceptor.of(gate)))
                .build()
                .start();
        int port = ((InetSocketAddress) server.getListenSockets().get(0)).getPort();
        ManagedChannel channel =
                NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        int answered = 0;
        long politeMax = 0;
        try {
            List<CompletableFuture<String>> noisy = new ArrayList<>();
            Channel noisyTenant = as(channel, "noisy", null);
            for (int i = 0; i < NOISY_CALLS; i++) {
                noisy.add(call(noisyTenant, "noisy-" + i));
            }
            while (gate.primitive().queueLength() < NOISY_CALLS / 2) { // the backlog is waiting
                Thread.sleep(1);
            }
            for (int i = 0; i < POLITE_CALLS; i++) {
                String id = "polite-" + i;
                long start = System.nanoTime();
                ClientCalls.blockingUnaryCall(as(channel, "polite", id), WORK, CallOptions.DEFAULT, id);
                politeMax = Math.max(politeMax, System.nanoTime() - start);
                answered++;
            }
            for (var call : noisy) {
                call.get(30, TimeUnit.SECONDS);
                answered++;
            }
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("a noisy call failed", e);
        } finally {
            channel.shutdownNow();
            server.shutdownNow();
            channel.awaitTermination(5, TimeUnit.SECONDS);
            server.awaitTermination(5, TimeUnit.SECONDS);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (available.getAsLong() != CAPACITY && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        return new Run(
                List.copyOf(overtaken), answered, available.getAsLong(), TimeUnit.NANOSECONDS.toMillis(politeMax));
    }

    private static CompletableFuture<String> call(Channel channel, String request) {
        CompletableFuture<String> answer = new CompletableFuture<>();
        ClientCalls.asyncUnaryCall(channel.newCall(WORK, CallOptions.DEFAULT), request, new StreamObserver<>() {
            @Override
            public void onNext(String value) {
                answer.complete(value);
            }

            @Override
            public void onError(Throwable t) {
                answer.completeExceptionally(t);
            }

            @Override
            public void onCompleted() {}
        });
        return answer;
    }

    /** The channel with the tenant header, and the call id the server matches arrivals by (or null). */
    private static Channel as(Channel channel, String tenant, String callId) {
        Metadata headers = new Metadata();
        headers.put(Metadata.Key.of("x-tenant", Metadata.ASCII_STRING_MARSHALLER), tenant);
        if (callId != null) {
            headers.put(Metadata.Key.of("x-call", Metadata.ASCII_STRING_MARSHALLER), callId);
        }
        return ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(headers));
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) throws IOException, InterruptedException {
        System.out.println("21. gRPC admission: a noisy tenant's " + NOISY_CALLS + " calls against a polite tenant's "
                + POLITE_CALLS + ", " + CAPACITY + " calls in flight (Netty)");
        Figures f = run();
        System.out.printf(
                "   keyed by x-tenant: noisy calls going before each polite call %s (at most %d), slowest polite call %d ms%n",
                f.fair().overtaken(), f.fair().maxOvertaken(), f.fair().politeMaxMillis());
        System.out.printf(
                "   plain FIFO:        the first polite call waited behind %d noisy calls, slowest polite call %d ms%n",
                f.fifo().overtaken().get(0), f.fifo().politeMaxMillis());
        System.out.printf(
                "   every call answered (%d and %d), every permit back%n",
                f.fair().answered(), f.fifo().answered());
    }
}
