// SPDX-License-Identifier: Apache-2.0
package dev.handoff.edge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.netflix.concurrency.limits.Limit;
import dev.handoff.FairShareSemaphore;
import dev.handoff.Semaphore;
import dev.handoff.adaptive.AdaptiveCapacity;
import dev.handoff.adaptive.AdaptiveFairShare;
import dev.handoff.adaptive.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

class AdaptiveAdmissionTest {

    /** A Netflix Limit that records the samples the adaptive capacity sends it (drops marked). */
    static final class RecordingLimit implements Limit {
        final List<String> samples = new ArrayList<>();
        final int limit;

        RecordingLimit(int limit) {
            this.limit = limit;
        }

        @Override
        public int getLimit() {
            return limit;
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

    @Test
    void releaseOutcomesReachTheAdaptiveCapacity() throws Exception {
        Semaphore s = new Semaphore(1);
        RecordingLimit limit = new RecordingLimit(4);
        AdaptiveCapacity adaptive = AdaptiveCapacity.builder(s)
                .minCapacity(2)
                .maxCapacity(50)
                .limit(limit)
                .build();
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .limiter(adaptive)
                .cost(String::length)
                .build();
        assertEquals(4, s.capacity());

        Admission ok = AdmissionControlTest.admitted(gate.tryAdmit("a"));
        Admission dropped = AdmissionControlTest.admitted(AdmissionControlTest.get(gate.admitAsync("b")));
        Admission timedOut = AdmissionControlTest.admitted(gate.tryAdmit("c"));
        Admission failed = AdmissionControlTest.admitted(gate.tryAdmit("d"));
        assertEquals(4, adaptive.inFlight());
        assertTrue(ok.release());
        assertTrue(dropped.release(Outcome.DROPPED));
        assertTrue(timedOut.release(new TimeoutException("downstream"))); // classified: a drop
        assertTrue(failed.release(new IllegalStateException("bug"))); // a failure: not sampled
        assertFalse(failed.release(Outcome.DROPPED), "only the first release counts");
        assertEquals(List.of("ok", "dropped", "dropped"), limit.samples());
        assertEquals(0, adaptive.inFlight());
        assertEquals(4, s.availablePermits());

        assertThrows(IllegalArgumentException.class, () -> ok.release(Outcome.REJECTED));
        // a request may cost up to the present capacity (4, set by the limit), not more
        assertEquals(ShedReason.COST_TOO_HIGH, gate.tryAdmit("ccccc").shedReason());
        assertEquals(4, s.availablePermits());
        Admission whole = AdmissionControlTest.admitted(gate.tryAdmit("cccc"));
        assertEquals(0, s.availablePermits());
        assertTrue(whole.release());
        assertEquals(4, s.availablePermits());
    }

    @Test
    void timedOutAndCancelledWaitsHoldNothingInTheAdaptiveCapacity() throws Exception {
        Semaphore s = new Semaphore(2);
        AdaptiveCapacity adaptive =
                AdaptiveCapacity.builder(s).minCapacity(2).maxCapacity(2).build();
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .limiter(adaptive)
                .maxWait(Duration.ofMillis(30))
                .build();
        Admission a = AdmissionControlTest.admitted(gate.tryAdmit("a"));
        Admission b = AdmissionControlTest.admitted(gate.tryAdmit("b"));
        AdmissionControlTest.assertShed(ShedReason.TIMED_OUT, AdmissionControlTest.get(gate.admitAsync("c")));
        assertTrue(gate.admitAsync("d").cancel(false));
        assertEquals(0, s.queueLength());
        assertEquals(2, adaptive.inFlight());
        a.release(Outcome.FAILURE);
        b.release();
        assertEquals(0, adaptive.inFlight());
        assertEquals(2, s.availablePermits());
    }

    @Test
    void anAdaptiveFairShareTakesPermitsForEachKey() throws Exception {
        FairShareSemaphore<String> fs = FairShareSemaphore.<String>builder(4).build();
        RecordingLimit limit = new RecordingLimit(4);
        AdaptiveFairShare<String> adaptive = AdaptiveFairShare.builder(fs)
                .minCapacity(2)
                .maxCapacity(8)
                .limit(limit)
                .build();
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .limiter(r -> r.substring(0, 1), adaptive)
                .build();
        Admission a = AdmissionControlTest.admitted(gate.tryAdmit("A1"));
        Admission b = AdmissionControlTest.admitted(AdmissionControlTest.get(gate.admitAsync("B1")));
        assertEquals(1, fs.heldPermits("A"));
        assertEquals(1, fs.heldPermits("B"));
        a.release(Outcome.DROPPED);
        b.release(new RuntimeException());
        assertEquals(List.of("dropped"), limit.samples());
        assertEquals(0, adaptive.inFlight());
        assertEquals(4, fs.availablePermits());
        assertEquals(fs, gate.primitive());
    }
}
