// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Semaphore;
import dev.handoff.SemaphoreRejectedException;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/**
 * The Java examples of docs/guide/adaptive.md (quick start), with a stand-in client, through
 * success, failure after the grant and failure of the acquisition itself.
 */
class GuideExamplesTest {

    record Response(int status) {
    }

    /** A stand-in for the user's client: answers with the status it is told to, or throws. */
    static final class Client {
        int status = 200;
        IOException failure;

        Response send(String request) throws IOException {
            if (failure != null) {
                throw failure;
            }
            return new Response(status);
        }

        CompletableFuture<Response> sendAsync(String request) {
            return new CompletableFuture<>(); // never answers: orTimeout decides
        }
    }

    final Client client = new Client();
    final Semaphore inFlight = Semaphore.builder(20).maxQueueLength(1_000).build();
    final AdaptiveCapacity adaptive = AdaptiveCapacity.builder(inFlight).minCapacity(4).maxCapacity(500).build();

    Response handle(String request) throws IOException, InterruptedException {
        try (SampledPermits p = adaptive.acquireBlocking(1)) {
            Response r2 = client.send(request);
            if (r2.status() == 503) {
                p.markDropped();
            }
            return r2;
        }
    }

    Response shed(String request) throws IOException {
        SampledPermits p = adaptive.tryAcquire(1);
        if (p == null) {
            return new Response(503);
        }
        try (p) {
            return client.send(request);
        }
    }

    @Test
    void theQuickStartRunsThroughSuccessFailureAndRefusal() throws Exception {
        assertEquals(20, adaptive.capacity());
        assertEquals(200, adaptive.withPermitsBlocking(1, () -> client.send("GET /")).status());
        CompletableFuture<Response> f = adaptive.withPermitsAsync(1,
                () -> client.sendAsync("GET /").orTimeout(20, TimeUnit.MILLISECONDS));
        assertTrue(assertThrows(CompletionException.class, f::join).getCause() instanceof TimeoutException);
        client.status = 503;
        assertEquals(503, handle("GET /").status());
        client.failure = new IOException("reset");
        assertThrows(IOException.class, () -> handle("GET /"));
        assertThrows(IOException.class, () -> adaptive.withPermitsBlocking(1, () -> client.send("GET /")));
        assertEquals(0, adaptive.inFlight(), "released after a failure");
        // Refusal: every permit held elsewhere.
        assertTrue(inFlight.tryAcquire(20));
        assertEquals(503, shed("GET /").status());
        Semaphore full = Semaphore.builder(4).maxQueueLength(0).build();
        AdaptiveCapacity small = AdaptiveCapacity.builder(full).minCapacity(4).build();
        assertTrue(full.tryAcquire(4));
        assertThrows(SemaphoreRejectedException.class, () -> small.withPermitsBlocking(1, () -> client.send("GET /")));
        inFlight.release(20);
        full.release(4);
        long[] sums = ((BaselineGradient) adaptive.controller()).sums();
        assertEquals(2, sums[0], "the 200, and the handle an IOException passed through unmarked (as the guide warns)");
        assertEquals(2, sums[1], "the async timeout and the 503");
        assertEquals(1, sums[2], "the shed request");
        assertEquals(1, sums[3], "the scoped call's IOException");
    }
}
