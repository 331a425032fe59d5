// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.FairShareSemaphore;
import dev.handoff.grpc.AdmissionInterceptor;
import io.grpc.CallOptions;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.ServerCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the examples of docs/integrations/grpc.md ({@link GrpcAdmission}) over real servers: an
 * answered call, a heavy one, a handler that fails, a shed call; every path gives its permits back.
 */
@Timeout(value = 1, unit = TimeUnit.MINUTES)
class GrpcSnippetsTest {

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

    static MethodDescriptor<String, String> method(String name) {
        return MethodDescriptor.<String, String>newBuilder()
                .setType(MethodDescriptor.MethodType.UNARY)
                .setFullMethodName(MethodDescriptor.generateFullMethodName("reports.Reports", name))
                .setRequestMarshaller(STRING)
                .setResponseMarshaller(STRING)
                .build();
    }

    static final MethodDescriptor<String, String> GET = method("Get");
    static final MethodDescriptor<String, String> EXPORT = method("Export");

    final ServerServiceDefinition reports = ServerServiceDefinition.builder("reports.Reports")
            .addMethod(GET, ServerCalls.asyncUnaryCall((request, out) -> {
                if (request.equals("fail")) {
                    throw new IllegalStateException("boom");
                }
                if (request.equals("busy")) {
                    out.onError(Status.RESOURCE_EXHAUSTED.asRuntimeException());
                    return;
                }
                out.onNext("report " + request);
                out.onCompleted();
            }))
            .addMethod(EXPORT, ServerCalls.asyncUnaryCall((request, out) -> {
                out.onNext("export " + request);
                out.onCompleted();
            }))
            .build();

    final GrpcAdmission docs = new GrpcAdmission(reports);
    final ExecutorService executor = Executors.newCachedThreadPool();
    Server server;
    ManagedChannel channel;

    @AfterEach
    void stop() throws InterruptedException {
        if (channel != null) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        if (server != null) {
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        executor.shutdownNow();
    }

    String call(MethodDescriptor<String, String> method, String tenant, String request) {
        Metadata headers = new Metadata();
        headers.put(Metadata.Key.of("x-tenant", Metadata.ASCII_STRING_MARSHALLER), tenant);
        return ClientCalls.blockingUnaryCall(
                ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(headers)),
                method,
                CallOptions.DEFAULT,
                request);
    }

    void allBack() throws InterruptedException {
        FairShareSemaphore<?> permits = (FairShareSemaphore<?>) docs.gate.primitive();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (permits.availablePermits() != 32 && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        assertEquals(32, permits.availablePermits());
        assertEquals(0, permits.queueLength());
    }

    @Test
    void theSetupAdmitsShedsAndReleasesOverNetty() throws Exception {
        server = docs.start(0);
        int port = ((InetSocketAddress) server.getListenSockets().get(0)).getPort();
        channel = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();

        assertEquals("report q3", call(GET, "acme", "q3"));
        assertEquals("export q3", call(EXPORT, "acme", "q3"));
        allBack();
        StatusRuntimeException failed = assertThrows(StatusRuntimeException.class, () -> call(GET, "acme", "fail"));
        assertEquals(Status.Code.UNKNOWN, failed.getStatus().getCode());
        allBack();

        docs.gate.close();
        StatusRuntimeException shed = assertThrows(StatusRuntimeException.class, () -> call(GET, "acme", "q3"));
        assertEquals(Status.Code.RESOURCE_EXHAUSTED, shed.getStatus().getCode());
        assertTrue(shed.getStatus().getDescription().contains("CLOSED"), shed::toString);
        assertEquals("1000", shed.getTrailers().get(AdmissionInterceptor.RETRY_PUSHBACK_MS));
    }

    @Test
    void theOptionsShedWithUnavailableAndReleaseEveryOutcome() throws Exception {
        String name = "grpc-options-" + System.nanoTime();
        server = InProcessServerBuilder.forName(name)
                .executor(executor)
                .addService(ServerInterceptors.intercept(reports, docs.interceptor(executor)))
                .build()
                .start();
        channel = InProcessChannelBuilder.forName(name).build();

        assertEquals("report q3", call(GET, "acme", "q3"));
        StatusRuntimeException busy = assertThrows(StatusRuntimeException.class, () -> call(GET, "acme", "busy"));
        assertEquals(Status.Code.RESOURCE_EXHAUSTED, busy.getStatus().getCode());
        allBack();

        docs.gate.close();
        StatusRuntimeException shed = assertThrows(StatusRuntimeException.class, () -> call(GET, "acme", "q3"));
        assertEquals(Status.Code.UNAVAILABLE, shed.getStatus().getCode());
    }
}
