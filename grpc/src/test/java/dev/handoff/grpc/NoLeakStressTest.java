// SPDX-License-Identifier: Apache-2.0
package dev.handoff.grpc;

import static dev.handoff.grpc.Harness.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Semaphore;
import dev.handoff.edge.AdmissionControl;
import dev.handoff.edge.ShedReason;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Many calls that end every way at once (answered, shed, timed out in the queue, cancelled by the
 * client while waiting or running, past their deadline, failed by a handler that throws,
 * server-streaming): once they are all over, every permit is back and nothing waits.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class NoLeakStressTest {

    static final long CAPACITY = 8;

    Harness harness;
    final ScheduledExecutorService cancels = Executors.newSingleThreadScheduledExecutor();

    @AfterEach
    void stop() throws InterruptedException {
        cancels.shutdownNow();
        if (harness != null) {
            harness.close();
        }
    }

    @ParameterizedTest
    @EnumSource(Harness.Transport.class)
    void noPermitLeaksAcrossThousandsOfCallsEndingEveryWay(Harness.Transport transport) throws Exception {
        int calls = transport == Harness.Transport.IN_PROCESS ? 10_000 : 2_000;
        long budgetNanos = TimeUnit.SECONDS.toNanos(transport == Harness.Transport.IN_PROCESS ? 8 : 5);
        Semaphore semaphore = Semaphore.builder(CAPACITY).maxQueueLength(32).build();
        AdmissionControl<GrpcRequest> gate = AdmissionControl.<GrpcRequest>builder()
                .limiter(semaphore)
                .maxWait(Duration.ofMillis(20))
                .build();
        harness = new Harness(transport, AdmissionInterceptor.of(gate));
        harness.unary = (request, out) -> {
            switch (request) {
                case "throw":
                    throw new IllegalStateException("boom");
                case "hang":
                    return; // ends only by a cancel or its deadline
                case "slow":
                    LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(500_000));
                    break;
                default:
                    break;
            }
            out.onNext(request);
            out.onCompleted();
        };

        assertEquals("ok", harness.unary("ok").get(30, TimeUnit.SECONDS)); // warm: connected, classes loaded
        java.util.concurrent.Semaphore inFlight = new java.util.concurrent.Semaphore(64);
        Map<Status.Code, AtomicInteger> endings = new ConcurrentHashMap<>();
        AtomicInteger done = new AtomicInteger();
        long start = System.nanoTime();
        int issued = 0;
        while (issued < calls && System.nanoTime() - start < budgetNanos) {
            inFlight.acquire();
            issued++;
            ThreadLocalRandom random = ThreadLocalRandom.current();
            int kind = random.nextInt(10);
            CompletableFuture<?> end;
            if (kind == 0) {
                Harness.Streamed streamed = harness.stream("s");
                end = streamed.end;
            } else {
                String request = kind <= 3 ? "ok" : kind <= 5 ? "slow" : kind == 6 ? "throw" : "hang";
                CallOptions options = CallOptions.DEFAULT;
                boolean byDeadline = request.equals("hang") ? random.nextBoolean() : random.nextInt(8) == 0;
                if (byDeadline) {
                    options = options.withDeadlineAfter(1 + random.nextInt(5), TimeUnit.MILLISECONDS);
                }
                ClientCall<String, String> call = harness.channel.newCall(Harness.UNARY, options);
                end = Harness.call(call, request);
                if (!byDeadline && (request.equals("hang") || random.nextInt(8) == 0)) {
                    cancels.schedule(
                            () -> call.cancel("the client gives up", null),
                            random.nextInt(3_000),
                            TimeUnit.MICROSECONDS);
                }
            }
            end.whenComplete((r, failure) -> {
                Status.Code code = failure instanceof StatusRuntimeException
                        ? ((StatusRuntimeException) failure).getStatus().getCode()
                        : failure == null ? Status.Code.OK : Status.Code.INTERNAL;
                endings.computeIfAbsent(code, c -> new AtomicInteger()).incrementAndGet();
                done.incrementAndGet();
                inFlight.release();
            });
        }
        int total = issued;
        await("every call over", () -> done.get() == total);
        await(
                "every permit back, nothing waiting",
                () -> semaphore.availablePermits() == CAPACITY && semaphore.queueLength() == 0);
        Map<ShedReason, Long> shed = new EnumMap<>(ShedReason.class);
        for (ShedReason reason : ShedReason.values()) {
            shed.put(reason, gate.shedCount(reason));
        }
        System.out.printf(
                "%s: %d calls in %d ms, endings %s, shed %s, handlers run %d%n",
                transport,
                total,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start),
                endings,
                shed,
                harness.started.get());
        assertTrue(total >= 500, "calls issued: " + total);
        assertEquals(CAPACITY, semaphore.availablePermits());
        assertTrue(endings.containsKey(Status.Code.OK) && endings.containsKey(Status.Code.UNKNOWN), endings::toString);
    }
}
