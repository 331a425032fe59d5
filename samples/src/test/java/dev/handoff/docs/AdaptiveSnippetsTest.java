// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.handoff.Semaphore;
import dev.handoff.SemaphoreClosedException;
import dev.handoff.SemaphoreRejectedException;
import dev.handoff.adaptive.AdaptiveCapacity;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import reactor.core.Exceptions;
import reactor.core.publisher.Mono;

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

        @Override
        public Mono<Adaptive.Response> sendReactive(String request) {
            return failure != null ? Mono.error(failure) : Mono.fromCallable(() -> Adaptive.Response.status(status));
        }
    }

    final Stub client = new Stub();
    final Adaptive a = new Adaptive(client);

    void allBack() {
        assertEquals(0, a.adaptive.inFlight());
        assertEquals(a.inFlight.capacity(), a.inFlight.availablePermits());
        assertEquals(0, a.tenants.inFlight());
        assertEquals(0, a.database.heldPermits("acme"));
        assertEquals(0, a.database.heldPermits("premium-bank"));
        assertEquals(a.database.capacity(), a.database.availablePermits());
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

    // ------------------------------------------------------------------ the fair share

    @Test
    void fairShareSuccess() throws Exception {
        assertEquals(20, a.tenants.capacity());
        assertEquals(200, a.query("acme", "GET /").status());
        assertEquals(200, a.query("premium-bank", "GET /").status());
        allBack();
    }

    @Test
    void fairShareFailureOfTheWorkAfterTheGrant() {
        client.failure = new IOException("connection reset");
        assertThrows(IOException.class, () -> a.query("acme", "GET /"));
        client.failure = new TimeoutException(); // a drop: given back all the same
        assertThrows(TimeoutException.class, () -> a.query("acme", "GET /"));
        allBack();
    }

    @Test
    void fairShareFailureOfTheAcquisition() throws Exception {
        assertTrue(a.database.tryAcquire("premium-bank", 20)); // every connection held by another tenant
        Thread.currentThread().interrupt();                     // so the wait is cut short
        assertThrows(InterruptedException.class, () -> a.query("acme", "GET /"));
        assertFalse(Thread.interrupted());
        assertEquals(0, a.database.queueLength(), "the withdrawn wait holds nothing");
        a.database.release("premium-bank", 20);
        allBack();
    }

    // ------------------------------------------------------------------ Reactor

    @Test
    void reactorSuccess() {
        assertEquals(200, a.callReactive("GET /").block().status());
        allBack();
    }

    @Test
    void reactorFailureOfTheWorkAfterTheGrant() {
        client.failure = new IOException("connection reset");
        assertInstanceOf(IOException.class, Exceptions.unwrap(assertThrows(RuntimeException.class, () -> a.callReactive("GET /").block())));
        client.failure = new TimeoutException(); // as the body's timeout(2 s) fails it: a drop
        assertInstanceOf(TimeoutException.class, Exceptions.unwrap(assertThrows(RuntimeException.class, () -> a.callReactive("GET /").block())));
        allBack();
    }

    @Test
    void reactorFailureOfTheAcquisition() {
        assertTrue(a.inFlight.tryAcquire(20)); // every permit held elsewhere
        AtomicReference<Throwable> failure = new AtomicReference<>();
        a.callReactive("GET /").subscribe(r -> fail("the body ran"), failure::set);
        assertEquals(1, a.inFlight.queueLength());
        a.inFlight.close();                    // the wait fails: nothing held, the body never runs
        assertInstanceOf(SemaphoreClosedException.class, failure.get());
        a.inFlight.release(20);
        allBack();
    }

    @Test
    void metricsBesideTheUsersListener() throws Exception {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        List<String> log = new ArrayList<>();
        Semaphore inFlight = new Semaphore(5_000);
        AdaptiveCapacity adaptive = Adaptive.metered(registry, inFlight, log);
        assertEquals(List.of("5000 -> 500 BOUNDS"), log, "the user's listener hears the change");
        assertEquals(
                1.0,
                registry.get("handoff.adaptive.capacity.changes")
                        .tags("name", "downstream", "reason", "bounds")
                        .functionCounter()
                        .count(),
                "and the metrics count it");
        assertEquals(500.0, registry.get("handoff.adaptive.capacity").tag("name", "downstream").gauge().value());

        assertEquals("ok", adaptive.withPermitsBlocking(1, () -> "ok")); // success
        assertThrows(TimeoutException.class, () -> adaptive.withPermitsBlocking(1, () -> {
            throw new TimeoutException("no answer"); // the work fails after the grant: a drop
        }));
        assertEquals(1.0, registry.get("handoff.adaptive.drops").functionCounter().count());
        inFlight.close();
        assertThrows(SemaphoreClosedException.class, () -> adaptive.withPermitsBlocking(1, () -> "never"));
        assertEquals(0.0, registry.get("handoff.adaptive.in.flight").gauge().value(), "nothing held");
        assertEquals(1.0, registry.get("handoff.adaptive.drops").functionCounter().count());
    }
}
