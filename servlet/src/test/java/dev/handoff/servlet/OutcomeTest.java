// SPDX-License-Identifier: Apache-2.0
package dev.handoff.servlet;

import static dev.handoff.servlet.TestServer.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.netflix.concurrency.limits.Limit;
import dev.handoff.Semaphore;
import dev.handoff.adaptive.AdaptiveCapacity;
import dev.handoff.adaptive.Outcome;
import dev.handoff.edge.AdmissionControl;
import jakarta.servlet.http.HttpServletRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * How each way a response ends reaches an adaptive capacity: a latency sample for a success, a
 * sample marked as a drop for overload, nothing for a failure.
 */
class OutcomeTest {

    /** A Netflix Limit that records the samples the adaptive capacity sends it. */
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

    static final class Fixture implements AutoCloseable {
        final Semaphore semaphore = new Semaphore(4);
        final RecordingLimit limit = new RecordingLimit();
        final AdaptiveCapacity adaptive = AdaptiveCapacity.builder(semaphore)
                .minCapacity(4)
                .maxCapacity(4)
                .limit(limit)
                .build();
        final AdmissionControl<HttpServletRequest> gate =
                AdmissionControl.<HttpServletRequest>builder().limiter(adaptive).build();
        final TestServer server;

        Fixture(Function<AdmissionControl<HttpServletRequest>, AdmissionFilter> filter) throws Exception {
            server = TestServer.start(filter.apply(gate));
        }

        /** Sends {@code path}, checks its status, and waits for its release (which may follow the response). */
        void send(String path, int status) throws Exception {
            assertEquals(status, server.get(path).statusCode(), path);
            await(path + " released", () -> adaptive.inFlight() == 0, adaptive::toString);
        }

        @Override
        public void close() throws Exception {
            server.close();
        }
    }

    @Test
    void theStatusSaysHowTheRequestWent() throws Exception {
        try (Fixture f = new Fixture(AdmissionFilter::new)) {
            f.send("/b/x", 200); // ok
            f.send("/b/x?do=status&status=404", 404); // ok: the server answered
            f.send("/b/x?do=status&status=503", 503); // dropped
            f.send("/b/x?do=status&status=504", 504); // dropped
            f.send("/b/x?do=status&status=500", 500); // a failure: no sample
            f.send("/b/x?do=throw", 500); // a failure: no sample
            f.send("/sync/x?do=throw-io", 500); // a failure: no sample
            f.send("/b/x?do=later&ms=5", 200); // ok, at the end of the async cycle
            f.send("/b/x?do=async-timeout&ms=200", 500); // the cycle timed out: dropped
            f.send("/b/x?do=redispatch-throw", 500); // a failure
            assertEquals(List.of("ok", "ok", "dropped", "dropped", "ok", "dropped"), f.limit.samples());
            assertEquals(4, f.semaphore.availablePermits());
        }
    }

    @Test
    void theOutcomesOfStatusesCanBeChosen() throws Exception {
        try (Fixture f = new Fixture(gate -> AdmissionFilter.builder(gate)
                .outcomes(status -> status >= 500 ? Outcome.DROPPED : status == 418 ? Outcome.REJECTED : null)
                .build())) {
            f.send("/b/x?do=status&status=500", 500); // dropped, as chosen
            f.send("/b/x?do=status&status=418", 418); // REJECTED is for requests never admitted: a failure
            f.send("/b/x", 200); // null: a failure
            f.send("/b/x?do=throw", 500); // a thrown exception: the classifier's, not the status's
            assertEquals(List.of("dropped"), f.limit.samples());
            assertEquals(4, f.semaphore.availablePermits());
        }
    }
}
