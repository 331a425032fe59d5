// SPDX-License-Identifier: Apache-2.0
package dev.handoff.servlet;

import static dev.handoff.servlet.TestServer.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.FairShareSemaphore;
import dev.handoff.edge.AdmissionControl;
import jakarta.servlet.http.HttpServletRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A tenant that floods does not hold back a polite one: with a key function, the polite tenant's
 * request waits behind about one request per busy tenant, not behind the flood's backlog. Measured
 * in admissions (how many of the flood's requests reach the servlet after the polite one starts
 * waiting and before it), never in time. Every request parks in the servlet and the test ends
 * them one at a time, so the order in which they reach the servlet is the order of their grants.
 */
class FairnessTest {
    static final int CAPACITY = 2;
    static final int BACKLOG = 40;

    /** How many of tenant A's requests are admitted after B's starts waiting and before it. */
    static int admittedAheadOfB(TestServer server, CompletableFuture<HttpResponse<String>> b, PrimitiveCounts q)
            throws Exception {
        int before = server.servlet.invocations.get();
        while (true) {
            // the capacity is full: nothing reaches the servlet until a request ends
            int expected = server.servlet.invocations.get() + 1;
            server.servlet.completeOne(); // a request of A ends: the next grant goes in
            await("the next grant in the servlet", () -> server.servlet.invocations.get() == expected, q::describe);
            List<String> arrivals = server.servlet.arrivals();
            if (arrivals.get(arrivals.size() - 1).equals("B")) {
                return expected - before - 1;
            }
        }
    }

    /** The queue of the fair share, for the messages of a wait that never ends. */
    interface PrimitiveCounts {
        String describe();
    }

    @Test
    void aFloodingTenantDoesNotDelayAPoliteOneBeyondOneRequestPerBusyTenant() throws Exception {
        AdmissionControl<HttpServletRequest> gate = AdmissionControl.<HttpServletRequest>builder()
                .capacity(CAPACITY)
                .key(request -> request.getHeader("X-Tenant"), tenant -> 1)
                .maxWait(TestServer.PATIENCE)
                .build();
        FairShareSemaphore<?> fs = (FairShareSemaphore<?>) gate.primitive();
        try (TestServer server = TestServer.start(new AdmissionFilter(gate))) {
            List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
            for (int i = 0; i < CAPACITY + BACKLOG; i++) {
                all.add(server.getAsync("/b/x?do=park", "X-Tenant", "A"));
            }
            await("A's flood in and queued", () -> fs.queueLength() == BACKLOG, fs::toString);
            assertEquals(CAPACITY, server.servlet.invocations.get());
            CompletableFuture<HttpResponse<String>> b = server.getAsync("/b/x?do=park", "X-Tenant", "B");
            all.add(b);
            await("B queued behind the flood", () -> fs.queueLength() == BACKLOG + 1, fs::toString);

            int ahead = admittedAheadOfB(server, b, fs::toString);
            // FIFO would admit all BACKLOG of A's first; the fair share about one per busy key (A)
            assertTrue(ahead <= 1, "admitted ahead of B: " + ahead + " of A's backlog of " + BACKLOG);

            while (server.servlet.completed.get() < all.size()) {
                server.servlet.completeOne();
            }
            for (CompletableFuture<HttpResponse<String>> r : all) {
                assertEquals("done\n", r.join().body());
            }
            await("every permit back", () -> fs.availablePermits() == CAPACITY && fs.queueLength() == 0, fs::toString);
        }
    }

    @Test
    void withoutAKeyThePoliteTenantWaitsBehindTheWholeFlood() throws Exception {
        AdmissionControl<HttpServletRequest> gate = AdmissionControl.<HttpServletRequest>builder()
                .capacity(CAPACITY)
                .maxWait(TestServer.PATIENCE)
                .build();
        dev.handoff.Semaphore s = (dev.handoff.Semaphore) gate.primitive();
        int backlog = 8;
        try (TestServer server = TestServer.start(new AdmissionFilter(gate))) {
            List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
            for (int i = 0; i < CAPACITY + backlog; i++) {
                all.add(server.getAsync("/b/x?do=park", "X-Tenant", "A"));
            }
            await("A's flood in and queued", () -> s.queueLength() == backlog, s::toString);
            CompletableFuture<HttpResponse<String>> b = server.getAsync("/b/x?do=park", "X-Tenant", "B");
            all.add(b);
            await("B queued behind the flood", () -> s.queueLength() == backlog + 1, s::toString);
            assertEquals(backlog, admittedAheadOfB(server, b, s::toString), "strict FIFO: the whole backlog first");
            while (server.servlet.completed.get() < all.size()) {
                server.servlet.completeOne();
            }
            for (CompletableFuture<HttpResponse<String>> r : all) {
                assertEquals("done\n", r.join().body());
            }
            await("every permit back", () -> s.availablePermits() == CAPACITY && s.queueLength() == 0, s::toString);
        }
    }
}
