// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Semaphore;
import dev.handoff.SemaphoreRejectedException;
import dev.handoff.adaptive.AdaptiveCapacity;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/**
 * Runs the Java snippets of docs/guide/adaptive.md ({@link Adaptive}) through success, a failure
 * of the work after the grant, and a failure of the acquisition itself: every path gives its
 * permits back.
 */
class AdaptiveSnippetsTest {

    /** A client that answers with {@code status}, or throws {@code failure}; its async call never answers. */
    static final class Stub implements Adaptive.Client {
        int status = 200;
        Exception failure;

        @Override
        public Adaptive.Response send(String request) throws Exception {
            if (failure != null) {
                throw failure;
            }
            return Adaptive.Response.status(status);
        }

        @Override
        public CompletableFuture<Adaptive.Response> sendAsync(String request) {
            return failure != null ? CompletableFuture.failedFuture(failure) : new CompletableFuture<>();
        }
    }

    final Stub client = new Stub();
    final Adaptive a = new Adaptive(client);

    void allBack() {
        assertEquals(0, a.adaptive.inFlight());
        assertEquals(a.inFlight.capacity(), a.inFlight.availablePermits());
    }

    @Test
    void success() throws Exception {
        assertEquals(20, a.adaptive.capacity());
        assertEquals(200, a.call("GET /").status());
        assertEquals(200, a.callWithHandle("GET /").status());
        assertEquals(200, a.shed("GET /").status());
        client.status = 503;
        assertEquals(503, a.callWithHandle("GET /").status());
        allBack();
    }

    @Test
    void failureOfTheWorkAfterTheGrant() {
        client.failure = new IOException("connection reset");
        assertThrows(IOException.class, () -> a.call("GET /"));
        assertThrows(IOException.class, () -> a.callWithHandle("GET /"));
        assertThrows(IOException.class, () -> a.shed("GET /"));
        CompletableFuture<Adaptive.Response> f = a.callAsync("GET /");
        assertInstanceOf(IOException.class, assertThrows(CompletionException.class, f::join).getCause());
        allBack();
    }

    @Test
    void failureOfTheAcquisition() throws Exception {
        assertTrue(a.inFlight.tryAcquire(20)); // every permit held elsewhere
        assertEquals(503, a.shed("GET /").status(), "shed at once");
        // A full queue: the scoped call is refused before the body runs.
        Semaphore full = Semaphore.builder(4).maxQueueLength(0).build();
        AdaptiveCapacity rejecting = AdaptiveCapacity.builder(full).minCapacity(4).build();
        assertTrue(full.tryAcquire(4));
        assertThrows(SemaphoreRejectedException.class, () -> rejecting.withPermitsBlocking(1, () -> client.send("GET /")));
        assertEquals(0, rejecting.inFlight());
        full.release(4);
        a.inFlight.release(20);
        allBack();
    }

    @Test
    void anAsyncCallThatTimesOutIsADropAndGivesItsPermitBack() {
        // orTimeout(2 s) of the snippet, without waiting 2 s: the stage fails with the same exception.
        client.failure = new TimeoutException();
        CompletableFuture<Adaptive.Response> f = a.callAsync("GET /");
        assertInstanceOf(TimeoutException.class, assertThrows(CompletionException.class, f::join).getCause());
        allBack();
    }

    @Test
    void theNetflixExampleStartsAtTheLimitsInitialValue() throws Exception {
        Semaphore s = new Semaphore(1);
        AdaptiveCapacity adaptive = Adaptive.netflix(s);
        assertEquals(20, adaptive.capacity()); // Gradient2Limit's default initial limit
        assertEquals(20, s.capacity());
        assertEquals("ok", adaptive.withPermitsBlocking(1, () -> "ok"));
        assertEquals(20, s.availablePermits());
    }
}
