// SPDX-License-Identifier: Apache-2.0
package dev.handoff.grpc;

import static dev.handoff.grpc.Harness.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Semaphore;
import dev.handoff.adaptive.Outcome;
import dev.handoff.edge.AdmissionControl;
import dev.handoff.edge.ShedReason;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The interceptor over real servers and channels, in-process and Netty: admission, shedding, release. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AdmissionInterceptorTest {

    Harness harness;
    final CountDownLatch proceed = new CountDownLatch(1);

    @AfterEach
    void stop() throws InterruptedException {
        proceed.countDown();
        if (harness != null) {
            harness.close();
        }
    }

    Harness open(Harness.Transport transport, AdmissionInterceptor interceptor) throws Exception {
        harness = new Harness(transport, interceptor);
        return harness;
    }

    static AdmissionControl<GrpcRequest> gate(Semaphore semaphore, Duration maxWait) {
        return AdmissionControl.<GrpcRequest>builder()
                .limiter(semaphore)
                .maxWait(maxWait)
                .retryAfter(Duration.ofMillis(250))
                .build();
    }

    /** A handler that answers only once the test lets it. */
    Harness.Body blocking() {
        return (request, out) -> {
            proceed.await();
            out.onNext("done:" + request);
            out.onCompleted();
        };
    }

    static Status statusOf(CompletableFuture<?> call) {
        CompletionException e = assertThrows(CompletionException.class, call::join);
        return assertInstanceOf(StatusRuntimeException.class, e.getCause()).getStatus();
    }

    @ParameterizedTest
    @EnumSource(Harness.Transport.class)
    void admittedCallsRunAndGiveTheirPermitsBack(Harness.Transport transport) throws Exception {
        Semaphore semaphore = Semaphore.builder(2).build();
        Harness h = open(transport, AdmissionInterceptor.of(gate(semaphore, Duration.ofSeconds(5))));
        for (int i = 0; i < 5; i++) {
            assertEquals("echo:" + i, h.unary("" + i).join());
        }
        assertEquals(5, h.started.get());
        assertEquals(2, semaphore.availablePermits(), "released before the status went out");
    }

    @ParameterizedTest
    @EnumSource(Harness.Transport.class)
    void aShedCallIsAnsweredWithoutRunningItsHandler(Harness.Transport transport) throws Exception {
        Semaphore semaphore = Semaphore.builder(1).build();
        AdmissionControl<GrpcRequest> gate = gate(semaphore, Duration.ZERO);
        Harness h = open(transport, AdmissionInterceptor.of(gate));
        h.unary = blocking();
        CompletableFuture<String> holder = h.unary("holder");
        await("the holder runs", () -> h.started.get() == 1);

        ClientCall<String, String> call = h.channel.newCall(Harness.UNARY, CallOptions.DEFAULT);
        CompletableFuture<Metadata> trailers = new CompletableFuture<>();
        CompletableFuture<Status> status = new CompletableFuture<>();
        call.start(
                new ClientCall.Listener<>() {
                    @Override
                    public void onClose(Status s, Metadata t) {
                        trailers.complete(t);
                        status.complete(s);
                    }
                },
                new Metadata());
        call.sendMessage("shed");
        call.halfClose();
        call.request(1);

        Status s = status.get(10, TimeUnit.SECONDS);
        assertEquals(Status.Code.RESOURCE_EXHAUSTED, s.getCode(), s.toString());
        assertTrue(s.getDescription().contains("QUEUE_FULL"), s.getDescription());
        assertEquals("250", trailers.join().get(AdmissionInterceptor.RETRY_PUSHBACK_MS));
        assertEquals(1, h.started.get(), "the shed call's handler never ran");
        assertEquals(1, gate.shedCount(ShedReason.QUEUE_FULL));

        proceed.countDown();
        assertEquals("done:holder", holder.join());
        await("the holder's permit back", () -> semaphore.availablePermits() == 1);
    }

    @ParameterizedTest
    @EnumSource(Harness.Transport.class)
    void aCallThatWaitsTooLongIsShedWithTheConfiguredStatus(Harness.Transport transport) throws Exception {
        Semaphore semaphore = Semaphore.builder(1).build();
        AdmissionControl<GrpcRequest> gate = gate(semaphore, Duration.ofMillis(50));
        Harness h = open(
                transport,
                AdmissionInterceptor.builder(gate)
                        .shedStatus(Status.Code.UNAVAILABLE)
                        .build());
        h.unary = blocking();
        CompletableFuture<String> holder = h.unary("holder");
        await("the holder runs", () -> h.started.get() == 1);

        Status s = statusOf(h.unary("late"));
        assertEquals(Status.Code.UNAVAILABLE, s.getCode());
        assertTrue(s.getDescription().contains("TIMED_OUT"), s.getDescription());
        assertEquals(1, h.started.get(), "the timed-out call's handler never ran");
        await("its wait withdrawn", () -> semaphore.queueLength() == 0);

        proceed.countDown();
        holder.join();
        await("every permit back", () -> semaphore.availablePermits() == 1);
    }

    @ParameterizedTest
    @EnumSource(Harness.Transport.class)
    void aWaitingCallIsAdmittedWhenAnotherEnds(Harness.Transport transport) throws Exception {
        Semaphore semaphore = Semaphore.builder(1).build();
        Harness h = open(transport, AdmissionInterceptor.of(gate(semaphore, Duration.ofSeconds(30))));
        h.unary = blocking();
        CompletableFuture<String> first = h.unary("first");
        await("the first runs", () -> h.started.get() == 1);
        CompletableFuture<String> second = h.unary("second");
        await("the second waits", () -> semaphore.queueLength() == 1);
        assertEquals(1, h.started.get(), "the second's handler waits for a permit");
        assertFalse(second.isDone());

        proceed.countDown();
        assertEquals("done:first", first.join());
        assertEquals("done:second", second.join());
        assertEquals(2, h.started.get());
        // The client has its answer before the server's close callback gives the permit back.
        await("the permit back", () -> semaphore.availablePermits() == 1);
    }

    @ParameterizedTest
    @EnumSource(Harness.Transport.class)
    void aServerStreamingCallHoldsItsPermitsUntilItCloses(Harness.Transport transport) throws Exception {
        Semaphore semaphore = Semaphore.builder(1).build();
        Harness h = open(transport, AdmissionInterceptor.of(gate(semaphore, Duration.ofSeconds(30))));
        h.stream = (request, out) -> {
            for (int i = 0; i < 3; i++) {
                out.onNext(request + i);
            }
            proceed.await(); // every message sent, the call not closed
            out.onCompleted();
        };
        Harness.Streamed streamed = h.stream("s");
        await("three messages", () -> streamed.size() == 3);
        CompletableFuture<String> behind = h.unary("behind");
        await("the unary call waits", () -> semaphore.queueLength() == 1);
        assertEquals(0, semaphore.availablePermits(), "held after the last message");
        assertEquals(1, h.started.get(), "the call behind has not started");

        proceed.countDown();
        streamed.end.get(10, TimeUnit.SECONDS);
        assertEquals("echo:behind", behind.get(10, TimeUnit.SECONDS));
        assertEquals(List.of("s0", "s1", "s2"), streamed.messages);
        await("every permit back", () -> semaphore.availablePermits() == 1);
    }

    @ParameterizedTest
    @EnumSource(Harness.Transport.class)
    void aBidiCallHoldsItsPermitsUntilBothSidesEnd(Harness.Transport transport) throws Exception {
        Semaphore semaphore = Semaphore.builder(1).build();
        Harness h = open(transport, AdmissionInterceptor.of(gate(semaphore, Duration.ofSeconds(30))));
        Harness.Streamed replies = new Harness.Streamed();
        io.grpc.stub.StreamObserver<String> requests = io.grpc.stub.ClientCalls.asyncBidiStreamingCall(
                h.channel.newCall(Harness.BIDI, CallOptions.DEFAULT), replies);
        requests.onNext("a");
        await("the first echo", () -> replies.size() == 1);
        CompletableFuture<String> behind = h.unary("behind");
        await("the unary call waits", () -> semaphore.queueLength() == 1);
        requests.onNext("b");
        await("the second echo", () -> replies.size() == 2);
        assertEquals(0, semaphore.availablePermits(), "held between messages");
        assertFalse(behind.isDone());

        requests.onCompleted(); // the server ends its side in turn
        replies.end.get(10, TimeUnit.SECONDS);
        assertEquals("echo:behind", behind.get(10, TimeUnit.SECONDS));
        assertEquals(List.of("echo:a", "echo:b"), replies.messages);
        await("every permit back", () -> semaphore.availablePermits() == 1);
    }

    @ParameterizedTest
    @EnumSource(Harness.Transport.class)
    void aClientCancelReleasesARunningCallAndWithdrawsAWaitingOne(Harness.Transport transport) throws Exception {
        Semaphore semaphore = Semaphore.builder(1).build();
        Harness h = open(transport, AdmissionInterceptor.of(gate(semaphore, Duration.ofSeconds(30))));
        h.unary = (request, out) -> {}; // never answers
        ClientCall<String, String> running = h.channel.newCall(Harness.UNARY, CallOptions.DEFAULT);
        CompletableFuture<String> first = Harness.call(running, "running");
        await("the first runs", () -> h.started.get() == 1);
        ClientCall<String, String> waiting = h.channel.newCall(Harness.UNARY, CallOptions.DEFAULT);
        CompletableFuture<String> second = Harness.call(waiting, "waiting");
        await("the second waits", () -> semaphore.queueLength() == 1);

        waiting.cancel("the client gives up", null);
        assertEquals(Status.Code.CANCELLED, statusOf(second).getCode());
        await("the wait withdrawn", () -> semaphore.queueLength() == 0);
        assertEquals(0, semaphore.availablePermits());

        running.cancel("the client gives up", null);
        assertEquals(Status.Code.CANCELLED, statusOf(first).getCode());
        await("the running call's permit back", () -> semaphore.availablePermits() == 1);
        assertEquals(1, h.started.get(), "the withdrawn call never ran");
    }

    @Test
    void aDeadlineReleasesTheCallAsDropped() throws Exception {
        Semaphore semaphore = Semaphore.builder(1).build();
        List<Status.Code> ended = new CopyOnWriteArrayList<>();
        Harness h = open(
                Harness.Transport.IN_PROCESS,
                AdmissionInterceptor.builder(gate(semaphore, Duration.ofSeconds(30)))
                        .outcome(s -> {
                            ended.add(s.getCode());
                            return AdmissionInterceptor.defaultOutcome(s);
                        })
                        .build());
        h.unary = (request, out) -> {}; // never answers
        CompletableFuture<String> call =
                h.unary("slow", CallOptions.DEFAULT.withDeadlineAfter(100, TimeUnit.MILLISECONDS));
        assertEquals(Status.Code.DEADLINE_EXCEEDED, statusOf(call).getCode());
        await("the permit back", () -> semaphore.availablePermits() == 1);
        assertEquals(List.of(Status.Code.DEADLINE_EXCEEDED), ended);
        assertEquals(Outcome.DROPPED, AdmissionInterceptor.defaultOutcome(Status.DEADLINE_EXCEEDED));
    }

    @ParameterizedTest
    @EnumSource(Harness.Transport.class)
    void deadlinesReleaseRunningAndWaitingCalls(Harness.Transport transport) throws Exception {
        Semaphore semaphore = Semaphore.builder(1).build();
        Harness h = open(transport, AdmissionInterceptor.of(gate(semaphore, Duration.ofSeconds(30))));
        h.unary = (request, out) -> {}; // never answers
        CompletableFuture<String> running =
                h.unary("running", CallOptions.DEFAULT.withDeadlineAfter(300, TimeUnit.MILLISECONDS));
        await("the first runs", () -> h.started.get() == 1);
        CompletableFuture<String> waiting =
                h.unary("waiting", CallOptions.DEFAULT.withDeadlineAfter(200, TimeUnit.MILLISECONDS));
        assertEquals(Status.Code.DEADLINE_EXCEEDED, statusOf(waiting).getCode());
        assertEquals(Status.Code.DEADLINE_EXCEEDED, statusOf(running).getCode());
        await(
                "every permit back, no wait left",
                () -> semaphore.availablePermits() == 1 && semaphore.queueLength() == 0);
        assertEquals(1, h.started.get(), "the waiting call never ran");
    }

    @ParameterizedTest
    @EnumSource(Harness.Transport.class)
    void aHandlerThatThrowsReleases(Harness.Transport transport) throws Exception {
        Semaphore semaphore = Semaphore.builder(1).build();
        Harness h = open(transport, AdmissionInterceptor.of(gate(semaphore, Duration.ofSeconds(30))));
        CountDownLatch firstIn = new CountDownLatch(1);
        h.unary = (request, out) -> {
            if (request.equals("first")) {
                firstIn.countDown();
                proceed.await();
            }
            throw new IllegalStateException("boom: " + request);
        };
        CompletableFuture<String> first = h.unary("first");
        assertTrue(firstIn.await(10, TimeUnit.SECONDS));
        CompletableFuture<String> second = h.unary("second"); // admitted after a wait: started by the interceptor
        await("the second waits", () -> semaphore.queueLength() == 1);
        proceed.countDown();
        assertEquals(Status.Code.UNKNOWN, statusOf(first).getCode());
        assertEquals(Status.Code.UNKNOWN, statusOf(second).getCode());
        await("the permit back", () -> semaphore.availablePermits() == 1);
        assertEquals(2, h.started.get());
    }

    @ParameterizedTest
    @EnumSource(Harness.Transport.class)
    void theCostAndKeyFunctionsSeeTheMethodHeadersAndPeer(Harness.Transport transport) throws Exception {
        List<GrpcRequest> seen = new CopyOnWriteArrayList<>();
        List<String> tenants = new CopyOnWriteArrayList<>();
        AdmissionControl<GrpcRequest> gate = AdmissionControl.<GrpcRequest>builder()
                .capacity(4)
                .key(
                        r -> {
                            String tenant = java.util.Objects.requireNonNullElse(r.header("x-tenant"), "anonymous");
                            tenants.add(tenant);
                            return tenant;
                        },
                        tenant -> 1)
                .cost(r -> {
                    seen.add(r);
                    return r.method().getFullMethodName().equals("test.Gate/Stream") ? 2 : 1;
                })
                .build();
        Harness h = open(transport, AdmissionInterceptor.of(gate));
        assertEquals(
                "echo:x",
                Harness.call(FairnessTest.tenant(h.channel, "acme").newCall(Harness.UNARY, CallOptions.DEFAULT), "x")
                        .join());
        h.stream("s").end.get(10, TimeUnit.SECONDS);
        assertEquals(List.of("acme", "anonymous"), tenants);
        assertEquals("test.Gate/Unary", seen.get(0).method().getFullMethodName());
        assertEquals("acme", seen.get(0).headers().get(Metadata.Key.of("x-tenant", Metadata.ASCII_STRING_MARSHALLER)));
        assertEquals(null, seen.get(1).header("x-tenant"));
        assertTrue(seen.get(0).authority() != null, seen.get(0)::toString);
        if (transport == Harness.Transport.NETTY) {
            assertInstanceOf(java.net.InetSocketAddress.class, seen.get(0).remoteAddress());
        }
        assertEquals(
                seen.get(0).remoteAddress(), seen.get(0).attributes().get(io.grpc.Grpc.TRANSPORT_ATTR_REMOTE_ADDR));
        IllegalArgumentException binary =
                assertThrows(IllegalArgumentException.class, () -> seen.get(0).header("x-id-bin"));
        assertTrue(binary.getMessage().startsWith("header(x-id-bin)"), binary.getMessage());
        assertThrows(NullPointerException.class, () -> seen.get(0).header(null));
    }

    @Test
    void theBuilderRefusesBadSettingsNamingThem() {
        AdmissionControl<GrpcRequest> gate =
                AdmissionControl.<GrpcRequest>builder().capacity(1).build();
        IllegalArgumentException ok = assertThrows(
                IllegalArgumentException.class,
                () -> AdmissionInterceptor.builder(gate).shedStatus(Status.Code.OK));
        assertTrue(ok.getMessage().startsWith("shedStatus(OK)"), ok.getMessage());
        assertThrows(NullPointerException.class, () -> AdmissionInterceptor.builder(null));
        assertThrows(
                NullPointerException.class,
                () -> AdmissionInterceptor.builder(gate).outcome(null));
        assertThrows(
                NullPointerException.class,
                () -> AdmissionInterceptor.builder(gate).executor(null));
        assertThrows(
                NullPointerException.class,
                () -> AdmissionInterceptor.builder(gate).shedStatus(null));
        assertEquals(Outcome.SUCCESS, AdmissionInterceptor.defaultOutcome(Status.NOT_FOUND));
        assertEquals(Outcome.FAILURE, AdmissionInterceptor.defaultOutcome(Status.UNAVAILABLE));
        assertEquals(Outcome.FAILURE, AdmissionInterceptor.defaultOutcome(Status.CANCELLED));
    }
}
