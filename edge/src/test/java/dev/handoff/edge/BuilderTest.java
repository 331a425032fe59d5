// SPDX-License-Identifier: Apache-2.0
package dev.handoff.edge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.handoff.Semaphore;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class BuilderTest {

    static void assertMessage(Class<? extends Throwable> type, String message, Executable call) {
        assertEquals(message, assertThrows(type, call).getMessage());
    }

    @Test
    void argumentsOutOfRangeNameTheCallTheValueAndTheLimit() {
        AdmissionControl.Builder<String> b = AdmissionControl.builder();
        assertMessage(
                IllegalArgumentException.class,
                "capacity(0): must be between 1 and " + Semaphore.MAX_PERMITS,
                () -> b.capacity(0));
        assertMessage(
                IllegalArgumentException.class,
                "maxWait(PT-1S): must not be negative (zero: never wait)",
                () -> b.maxWait(Duration.ofSeconds(-1)));
        assertMessage(
                IllegalArgumentException.class,
                "retryAfter(PT-0.001S): must not be negative",
                () -> b.retryAfter(Duration.ofMillis(-1)));
        assertMessage(
                IllegalArgumentException.class, "maxQueueLength(-1): must not be negative", () -> b.maxQueueLength(-1));
        assertMessage(
                IllegalArgumentException.class,
                "maxQueuedPermits(-2): must not be negative",
                () -> b.maxQueuedPermits(-2));
        assertMessage(
                IllegalArgumentException.class,
                "maxQueuedPermitsPerKey(-3): must not be negative",
                () -> b.maxQueuedPermitsPerKey(-3));
        assertMessage(
                IllegalArgumentException.class, "maxPermitsPerKey(0): must be at least 1", () -> b.maxPermitsPerKey(0));
        assertMessage(NullPointerException.class, "cost(null): the cost function is null", () -> b.cost(null));
    }

    @Test
    void conflictingSettingsAreRefusedByBuild() {
        assertMessage(
                IllegalStateException.class,
                "build(): no limit; set capacity(..) or give a primitive with limiter(..)",
                () -> AdmissionControl.<String>builder().build());
        Semaphore s = new Semaphore(2);
        assertThrows(
                IllegalStateException.class,
                () -> AdmissionControl.<String>builder().capacity(3).limiter(s).build());
        assertThrows(
                IllegalStateException.class,
                () -> AdmissionControl.<String>builder()
                        .limiter(s)
                        .maxQueueLength(3)
                        .build());
        assertThrows(
                IllegalStateException.class,
                () -> AdmissionControl.<String>builder().limiter(s).limiter(s));
        assertMessage(
                IllegalStateException.class,
                "build(): maxPermitsPerKey(2) needs a key; set key(..)",
                () -> AdmissionControl.<String>builder()
                        .capacity(3)
                        .maxPermitsPerKey(2)
                        .build());
    }

    @Test
    void defaultsAndToString() {
        AdmissionControl<String> gate = AdmissionControl.<String>builder()
                .capacity(3)
                .maxQueueLength(5)
                .name("api")
                .build();
        assertEquals(Duration.ofSeconds(1), gate.maxWait());
        assertEquals(Duration.ofSeconds(1), gate.retryAfter());
        assertEquals("api", gate.primitive().name());
        assertEquals("AdmissionControl[maxWait=PT1S, retryAfter=PT1S, " + gate.primitive() + "]", gate.toString());
        Decision shed = AdmissionControl.<String>builder()
                .capacity(1)
                .retryAfter(Duration.ZERO)
                .build()
                .tryAdmit("aa");
        assertEquals("Decision[admitted, cost=1]", shed.toString());
    }
}
