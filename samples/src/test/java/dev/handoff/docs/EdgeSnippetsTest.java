// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.handoff.FairShareSemaphore;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

/**
 * Runs the Java example of docs/guide/admission.md ({@link EdgeGate}) through success, a failure
 * of the handler after the admission, a handler that throws, and a shed request: every path gives
 * its permits back.
 */
class EdgeSnippetsTest {

    CompletableFuture<EdgeGate.Response> next = CompletableFuture.completedFuture(new EdgeGate.Response(200, 0));
    RuntimeException thrown;
    final EdgeGate g = new EdgeGate(request -> {
        if (thrown != null) {
            throw thrown;
        }
        return next;
    });

    void allBack() {
        FairShareSemaphore<?> fs = (FairShareSemaphore<?>) g.gate.primitive();
        assertEquals(64, fs.availablePermits());
        assertEquals(0, fs.queueLength());
    }

    @Test
    void success() {
        assertEquals(200, g.serve(new EdgeGate.Request("acme", 10)).join().status());
        allBack();
    }

    @Test
    void failureAfterTheAdmission() {
        next = CompletableFuture.failedFuture(new IllegalStateException("boom"));
        assertThrows(CompletionException.class, () -> g.serve(new EdgeGate.Request("acme", 10)).join());
        allBack();
    }

    @Test
    void handlerThrows() {
        thrown = new IllegalStateException("boom");
        assertThrows(CompletionException.class, () -> g.serve(new EdgeGate.Request("acme", 10)).join());
        allBack();
    }

    @Test
    void shedWhenClosed() {
        g.gate.close();
        EdgeGate.Response r = g.serve(new EdgeGate.Request("acme", 10)).join();
        assertEquals(503, r.status());
        assertEquals(2, r.retryAfterSeconds());
    }
}
