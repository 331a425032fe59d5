// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * The server of the edge benchmark: a real grpc-java server on the in-process transport, one unary
 * method, behind the interceptor of one contender (or none), and a client channel to it.
 *
 * <p><b>The handler has a knee</b>, the model of {@link AdaptiveSimulation}'s load-dependent
 * scenario ({@link AdaptiveSimulation#uniformServiceNanos}, {@link AdaptiveSimulation#beyondKnee}):
 * a call takes 8 to 12 ms of its own, longer by the factor (calls in service + 1) / knee once more
 * than {@code knee} are in service. So the server answers at most about knee / 10 ms calls a
 * second, however many it takes in; beyond that, every call it admits makes the later ones slower.
 * The handler holds no thread while it "works": it schedules its answer on one timer thread. A
 * call whose client gave up (its deadline passed) is still worked through to its end, as a
 * server that does not watch for cancellation would: the work is wasted, and it still slows the
 * others. {@link #inService()} counts the calls whose work has started and not ended: the server's
 * in-flight count, whatever the limiter in front of it believes.
 */
final class EdgeServer implements AutoCloseable {

    /** The header that names the tenant. */
    static final Metadata.Key<String> TENANT = Metadata.Key.of("x-tenant", Metadata.ASCII_STRING_MARSHALLER);

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

    /** The one method: unary, a string in, the same string out. */
    static final MethodDescriptor<String, String> WORK = MethodDescriptor.<String, String>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName("edge.Backend/Work")
            .setRequestMarshaller(STRING)
            .setResponseMarshaller(STRING)
            .build();

    private static final AtomicLong SERVERS = new AtomicLong();

    private final int knee;
    private final SplittableRandom random;
    private final AtomicInteger inService = new AtomicInteger();
    private final ScheduledExecutorService timer;
    private final ExecutorService executor;
    private final Server server;
    private final ManagedChannel channel;

    /**
     * Starts a server and its channel.
     *
     * @param knee the calls in service beyond which each call slows down
     * @param interceptor the contender's interceptor, given the server's executor; null for none
     * @param seed the random stream of the service times
     * @param executors how many threads the server's executor has (handlers run there)
     * @throws IOException if the server cannot start
     */
    EdgeServer(int knee, Function<ExecutorService, ServerInterceptor> interceptor, long seed, int executors)
            throws IOException {
        this.knee = knee;
        this.random = new SplittableRandom(seed);
        String name = "edge-benchmark-" + SERVERS.incrementAndGet();
        this.timer = Executors.newSingleThreadScheduledExecutor(daemon(name + "-timer"));
        this.executor = Executors.newFixedThreadPool(executors, daemon(name + "-executor"));
        ServerServiceDefinition service = ServerServiceDefinition.builder("edge.Backend")
                .addMethod(WORK, ServerCalls.asyncUnaryCall(this::handle))
                .build();
        ServerInterceptor limit = interceptor.apply(executor);
        this.server = InProcessServerBuilder.forName(name)
                .executor(executor)
                .addService(limit == null ? service : ServerInterceptors.intercept(service, limit))
                .build()
                .start();
        this.channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    }

    private void handle(String request, StreamObserver<String> observer) {
        ServerCallStreamObserver<String> out = (ServerCallStreamObserver<String>) observer;
        out.setOnCancelHandler(() -> {
            // the work goes on: see the class comment
        });
        int before = inService.getAndIncrement();
        long service;
        synchronized (random) {
            service = AdaptiveSimulation.beyondKnee(AdaptiveSimulation.uniformServiceNanos(random), before, knee);
        }
        timer.schedule(
                () -> {
                    inService.decrementAndGet();
                    if (out.isCancelled()) {
                        return;
                    }
                    try {
                        out.onNext(request);
                        out.onCompleted();
                    } catch (RuntimeException e) {
                        // cancelled between the check and the answer: nobody is listening
                    }
                },
                service,
                TimeUnit.NANOSECONDS);
    }

    /** @return the calls whose work has started and not ended */
    int inService() {
        return inService.get();
    }

    /** @return the client's channel to this server */
    ManagedChannel channel() {
        return channel;
    }

    @Override
    public void close() throws InterruptedException {
        channel.shutdownNow();
        server.shutdownNow();
        channel.awaitTermination(5, TimeUnit.SECONDS);
        server.awaitTermination(5, TimeUnit.SECONDS);
        timer.shutdownNow();
        executor.shutdownNow();
    }

    private static ThreadFactory daemon(String name) {
        AtomicInteger count = new AtomicInteger();
        return task -> {
            Thread thread = new Thread(task, name + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }
}
