// SPDX-License-Identifier: Apache-2.0
package dev.handoff.grpc;

import static dev.handoff.grpc.Harness.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.netflix.concurrency.limits.Limit;
import dev.handoff.Semaphore;
import dev.handoff.adaptive.AdaptiveCapacity;
import dev.handoff.adaptive.Outcome;
import dev.handoff.edge.AdmissionControl;
import io.grpc.CallOptions;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** How each way a call ends reaches an adaptive capacity: a latency sample, a drop, or nothing. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AdaptiveOutcomeTest {

    /** A Netflix Limit that records the samples the adaptive capacity sends it (drops marked). */
    static final class RecordingLimit implements Limit {
        private final List<String> samples = new ArrayList<>();

        @Override
        public int getLimit() {
            return 4;
        }

        @Override
        public void notifyOnChange(Consumer<Integer> consumer) {}

        @Override
        public synchronized void onSample(long startTime, long rtt, int inflight, boolean didDrop) {
            samples.add(didDrop ? "dropped" : "ok");
        }

        synchronized List<String> samples() {
            return new ArrayList<>(samples);
        }
    }

    Harness harness;

    @AfterEach
    void stop() throws InterruptedException {
        if (harness != null) {
            harness.close();
        }
    }

    AdaptiveCapacity adaptive(RecordingLimit limit) {
        return AdaptiveCapacity.builder(Semaphore.builder(1).build())
                .minCapacity(2)
                .maxCapacity(50)
                .limit(limit)
                .build();
    }

    void answer(Harness h) {
        h.unary = (request, out) -> {
            switch (request) {
                case "ok":
                    out.onNext(request);
                    out.onCompleted();
                    return;
                case "throw":
                    throw new IllegalStateException("boom");
                case "hang":
                    return;
                default:
                    out.onError(Status.fromCode(Status.Code.valueOf(request)).asRuntimeException());
            }
        };
    }

    /** Runs one call to its end and waits for its permits to come back. */
    void end(AdaptiveCapacity adaptive, String request, CallOptions options) throws InterruptedException {
        try {
            harness.unary(request, options).join();
        } catch (CompletionException expected) {
            // the statuses under test
        }
        await("the permit back", () -> adaptive.inFlight() == 0);
    }

    @Test
    void eachEndingReachesTheAdaptiveCapacityAsTheDefaultOutcomeSays() throws Exception {
        RecordingLimit limit = new RecordingLimit();
        AdaptiveCapacity adaptive = adaptive(limit);
        AdmissionControl<GrpcRequest> gate =
                AdmissionControl.<GrpcRequest>builder().limiter(adaptive).build();
        harness = new Harness(Harness.Transport.IN_PROCESS, AdmissionInterceptor.of(gate));
        answer(harness);

        end(adaptive, "ok", CallOptions.DEFAULT);
        assertEquals(List.of("ok"), limit.samples());
        end(adaptive, "NOT_FOUND", CallOptions.DEFAULT); // the handler's answer: a sample
        assertEquals(List.of("ok", "ok"), limit.samples());
        end(adaptive, "UNAVAILABLE", CallOptions.DEFAULT); // a failure: not sampled
        end(adaptive, "throw", CallOptions.DEFAULT);
        assertEquals(List.of("ok", "ok"), limit.samples());
        end(adaptive, "DEADLINE_EXCEEDED", CallOptions.DEFAULT);
        assertEquals(List.of("ok", "ok", "dropped"), limit.samples());
        end(adaptive, "hang", CallOptions.DEFAULT.withDeadlineAfter(50, TimeUnit.MILLISECONDS));
        assertEquals(List.of("ok", "ok", "dropped", "dropped"), limit.samples(), "cancelled at its deadline");
    }

    @Test
    void aCustomOutcomeDecidesAndABadOneStillReleases() throws Exception {
        RecordingLimit limit = new RecordingLimit();
        AdaptiveCapacity adaptive = adaptive(limit);
        AdmissionControl<GrpcRequest> gate =
                AdmissionControl.<GrpcRequest>builder().limiter(adaptive).build();
        harness = new Harness(
                Harness.Transport.IN_PROCESS,
                AdmissionInterceptor.builder(gate)
                        .outcome(s -> s.getCode() == Status.Code.RESOURCE_EXHAUSTED
                                ? Outcome.DROPPED
                                : s.getCode() == Status.Code.ABORTED ? null : AdmissionInterceptor.defaultOutcome(s))
                        .build());
        answer(harness);

        end(adaptive, "RESOURCE_EXHAUSTED", CallOptions.DEFAULT);
        assertEquals(List.of("dropped"), limit.samples());
        end(adaptive, "ABORTED", CallOptions.DEFAULT); // null from the function: released as a failure
        assertEquals(List.of("dropped"), limit.samples());
        assertEquals(
                Status.Code.ABORTED,
                assertThrows(
                                                CompletionException.class,
                                                () -> harness.unary("ABORTED").join())
                                        .getCause()
                                instanceof io.grpc.StatusRuntimeException sre
                        ? sre.getStatus().getCode()
                        : null);
        await("the permit back", () -> adaptive.inFlight() == 0);
    }
}
