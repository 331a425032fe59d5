// SPDX-License-Identifier: Apache-2.0
package dev.handoff.grpc;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A real gRPC server (in-process or Netty on port 0) with one unary and one server-streaming
 * method of strings, behind an {@link AdmissionInterceptor}, and a channel to it. What the
 * handlers do is set per test; {@link #started} counts the handlers that ran.
 */
final class Harness implements AutoCloseable {

    enum Transport {
        IN_PROCESS,
        NETTY
    }

    /** A handler: the request and where its responses go. */
    interface Body {
        void handle(String request, StreamObserver<String> responses) throws Exception;
    }

    static final MethodDescriptor.Marshaller<String> STRING = new MethodDescriptor.Marshaller<>() {
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

    static final MethodDescriptor<String, String> UNARY = MethodDescriptor.<String, String>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName("test.Gate/Unary")
            .setRequestMarshaller(STRING)
            .setResponseMarshaller(STRING)
            .build();

    static final MethodDescriptor<String, String> STREAM = MethodDescriptor.<String, String>newBuilder()
            .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
            .setFullMethodName("test.Gate/Stream")
            .setRequestMarshaller(STRING)
            .setResponseMarshaller(STRING)
            .build();

    static final MethodDescriptor<String, String> BIDI = MethodDescriptor.<String, String>newBuilder()
            .setType(MethodDescriptor.MethodType.BIDI_STREAMING)
            .setFullMethodName("test.Gate/Chat")
            .setRequestMarshaller(STRING)
            .setResponseMarshaller(STRING)
            .build();

    private static final AtomicInteger NAMES = new AtomicInteger();

    /** gRPC logs every handler that throws, with its stack; the tests make many on purpose. */
    private static final Logger GRPC_LOG = Logger.getLogger("io.grpc");

    static {
        GRPC_LOG.setLevel(Level.OFF);
    }

    final AtomicInteger started = new AtomicInteger();
    volatile Body unary = (request, out) -> {
        out.onNext("echo:" + request);
        out.onCompleted();
    };
    volatile Body stream = (request, out) -> {
        for (int i = 0; i < 3; i++) {
            out.onNext(request + i);
        }
        out.onCompleted();
    };

    final Server server;
    final ManagedChannel channel;

    Harness(Transport transport, AdmissionInterceptor interceptor) throws IOException {
        ServerServiceDefinition service = ServerServiceDefinition.builder("test.Gate")
                .addMethod(UNARY, ServerCalls.asyncUnaryCall((request, out) -> run(unary, request, out)))
                .addMethod(STREAM, ServerCalls.asyncServerStreamingCall((request, out) -> run(stream, request, out)))
                .addMethod(BIDI, ServerCalls.asyncBidiStreamingCall(out -> {
                    started.incrementAndGet();
                    return new StreamObserver<String>() { // echoes each message, ends when the client does
                        @Override
                        public void onNext(String value) {
                            out.onNext("echo:" + value);
                        }

                        @Override
                        public void onError(Throwable t) {}

                        @Override
                        public void onCompleted() {
                            out.onCompleted();
                        }
                    };
                }))
                .build();
        ServerServiceDefinition intercepted = ServerInterceptors.intercept(service, interceptor);
        if (transport == Transport.IN_PROCESS) {
            String name = "admission-test-" + NAMES.incrementAndGet();
            server = InProcessServerBuilder.forName(name)
                    .addService(intercepted)
                    .build()
                    .start();
            channel = InProcessChannelBuilder.forName(name).build();
        } else {
            server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                    .addService(intercepted)
                    .build()
                    .start();
            int port = ((InetSocketAddress) server.getListenSockets().get(0)).getPort();
            channel = NettyChannelBuilder.forAddress("127.0.0.1", port)
                    .usePlaintext()
                    .build();
        }
        channel.getState(true); // connect now, not in the first test call
    }

    private void run(Body body, String request, StreamObserver<String> out) {
        started.incrementAndGet();
        try {
            body.handle(request, out);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** A unary call; its future completes with the response once the status is in, or fails with a StatusRuntimeException. */
    CompletableFuture<String> unary(String request, CallOptions options) {
        return call(channel.newCall(UNARY, options), request);
    }

    CompletableFuture<String> unary(String request) {
        return unary(request, CallOptions.DEFAULT);
    }

    static CompletableFuture<String> call(ClientCall<String, String> call, String request) {
        CompletableFuture<String> result = new CompletableFuture<>();
        ClientCalls.asyncUnaryCall(call, request, new StreamObserver<>() {
            private volatile String answer;

            @Override
            public void onNext(String value) {
                answer = value; // the call is over only with its status: the answer may come first
            }

            @Override
            public void onError(Throwable t) {
                result.completeExceptionally(t);
            }

            @Override
            public void onCompleted() {
                result.complete(answer);
            }
        });
        return result;
    }

    /** The messages of a server-streaming call as they come, and its end. */
    static final class Streamed implements StreamObserver<String> {
        final List<String> messages = new ArrayList<>();
        final CompletableFuture<Void> end = new CompletableFuture<>();

        @Override
        public synchronized void onNext(String value) {
            messages.add(value);
        }

        @Override
        public void onError(Throwable t) {
            end.completeExceptionally(t);
        }

        @Override
        public void onCompleted() {
            end.complete(null);
        }

        synchronized int size() {
            return messages.size();
        }
    }

    Streamed stream(String request) {
        Streamed streamed = new Streamed();
        ClientCalls.asyncServerStreamingCall(channel.newCall(STREAM, CallOptions.DEFAULT), request, streamed);
        return streamed;
    }

    /** Waits, a bounded time, until {@code condition} holds; fails with {@code what} if it never does. */
    static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not within 10 s: " + what);
            }
            Thread.sleep(1);
        }
    }

    @Override
    public void close() throws InterruptedException {
        channel.shutdownNow();
        server.shutdownNow();
        channel.awaitTermination(5, TimeUnit.SECONDS);
        server.awaitTermination(5, TimeUnit.SECONDS);
    }
}
