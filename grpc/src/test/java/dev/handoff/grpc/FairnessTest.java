// SPDX-License-Identifier: Apache-2.0
package dev.handoff.grpc;

import static dev.handoff.grpc.Harness.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.FairShareSemaphore;
import dev.handoff.PrimitiveView;
import dev.handoff.Semaphore;
import dev.handoff.edge.AdmissionControl;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Metadata;
import io.grpc.stub.MetadataUtils;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A flood from tenant A does not delay tenant B behind A's backlog when the gate is keyed by a
 * tenant header: B's call is admitted after at most one more of A's. Measured by the order in which
 * the handlers start, one permit freed at a time, not by the clock. Without a key, the same flood
 * puts B behind all of A's backlog.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FairnessTest {

    static final int CAPACITY = 2;
    static final int FLOOD = 20;

    Harness harness;
    final java.util.concurrent.Semaphore proceed = new java.util.concurrent.Semaphore(0);

    @AfterEach
    void stop() throws InterruptedException {
        proceed.release(1000);
        if (harness != null) {
            harness.close();
        }
    }

    static Channel tenant(Channel channel, String tenant) {
        Metadata headers = new Metadata();
        headers.put(Metadata.Key.of("x-tenant", Metadata.ASCII_STRING_MARSHALLER), tenant);
        return ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(headers));
    }

    /** Floods from A, then one call from B; returns how many of A's calls started after B arrived, before B. */
    int aheadOfB(
            Harness.Transport transport, AdmissionControl<GrpcRequest> gate, LongSupplier queued, LongSupplier free)
            throws Exception {
        harness = new Harness(transport, AdmissionInterceptor.of(gate));
        List<String> startOrder = new CopyOnWriteArrayList<>();
        harness.unary = (request, out) -> {
            startOrder.add(request);
            proceed.acquire();
            out.onNext(request);
            out.onCompleted();
        };
        Channel a = tenant(harness.channel, "A");
        Channel b = tenant(harness.channel, "B");
        List<CompletableFuture<String>> calls = new ArrayList<>();
        for (int i = 0; i < FLOOD; i++) {
            calls.add(Harness.call(a.newCall(Harness.UNARY, CallOptions.DEFAULT), "A" + i));
        }
        await("A's backlog queued", () -> queued.getAsLong() == FLOOD - CAPACITY && startOrder.size() == CAPACITY);
        calls.add(Harness.call(b.newCall(Harness.UNARY, CallOptions.DEFAULT), "B"));
        await("B queued", () -> queued.getAsLong() == FLOOD - CAPACITY + 1);

        while (!startOrder.contains("B")) {
            int before = startOrder.size();
            proceed.release(); // one call ends, one permit goes to the next in the limit's order
            await("the next call starts", () -> startOrder.size() == before + 1);
        }
        int position = startOrder.indexOf("B");
        proceed.release(1000);
        for (CompletableFuture<String> call : calls) {
            call.get(10, TimeUnit.SECONDS);
        }
        await("every permit back", () -> free.getAsLong() == CAPACITY && queued.getAsLong() == 0);
        assertEquals(FLOOD + 1, startOrder.size());
        return position - CAPACITY;
    }

    @ParameterizedTest
    @EnumSource(Harness.Transport.class)
    void aFloodingTenantDoesNotDelayAPoliteOne(Harness.Transport transport) throws Exception {
        FairShareSemaphore<String> tenants =
                FairShareSemaphore.<String>builder(CAPACITY).build();
        AdmissionControl<GrpcRequest> gate = AdmissionControl.<GrpcRequest>builder()
                .limiter(r -> Objects.requireNonNullElse(r.header("x-tenant"), "anonymous"), tenants)
                .maxWait(Duration.ofSeconds(30))
                .build();
        PrimitiveView view = gate.primitive();
        int ahead = aheadOfB(transport, gate, view::queueLength, tenants::availablePermits);
        assertTrue(
                ahead <= 1,
                "A's calls admitted after B arrived and before B: " + ahead + " (at most one per busy key)");
    }

    @ParameterizedTest
    @EnumSource(Harness.Transport.class)
    void withoutAKeyTheFloodDelaysThePoliteTenantBehindItsBacklog(Harness.Transport transport) throws Exception {
        Semaphore fifo = Semaphore.builder(CAPACITY).build();
        AdmissionControl<GrpcRequest> gate = AdmissionControl.<GrpcRequest>builder()
                .limiter(fifo)
                .maxWait(Duration.ofSeconds(30))
                .build();
        int ahead = aheadOfB(transport, gate, fifo::queueLength, fifo::availablePermits);
        assertEquals(FLOOD - CAPACITY, ahead, "strict FIFO: B behind all of A's backlog");
    }
}
