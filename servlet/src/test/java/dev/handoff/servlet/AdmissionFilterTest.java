// SPDX-License-Identifier: Apache-2.0
package dev.handoff.servlet;

import static dev.handoff.servlet.TestServer.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Semaphore;
import dev.handoff.edge.AdmissionControl;
import dev.handoff.edge.ShedReason;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServletRequest;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * The filter in front of a real Jetty 12.1 (ee10) servlet, through the JDK's HTTP client: what is
 * admitted runs, what is shed gets 503 and {@code Retry-After} before the servlet runs, a waiting
 * request is admitted when another ends and holds no container thread while it waits, and the
 * permits are held until the response ends (an async servlet's, a streaming one's) and no longer,
 * however it ends.
 */
class AdmissionFilterTest {

    static AdmissionControl<HttpServletRequest> gate(Semaphore s, Duration maxWait) {
        return AdmissionControl.<HttpServletRequest>builder()
                .limiter(s)
                .maxWait(maxWait)
                .retryAfter(Duration.ofMillis(1_500))
                .build();
    }

    static void allBack(Semaphore s) throws InterruptedException {
        await("every permit back", () -> s.availablePermits() == s.capacity() && s.queueLength() == 0, s::toString);
    }

    @Test
    void anAdmittedRequestRunsAndGivesItsPermitsBack() throws Exception {
        Semaphore s = new Semaphore(2);
        try (TestServer server = TestServer.start(new AdmissionFilter(gate(s, Duration.ofSeconds(5))))) {
            HttpResponse<String> r = server.get("/b/x");
            assertEquals(200, r.statusCode());
            assertEquals("ok", r.body());
            assertEquals(1, server.servlet.invocations.get());
            allBack(s);
            HttpResponse<String> blocking = server.get("/sync/x");
            assertEquals(200, blocking.statusCode());
            allBack(s);
        }
    }

    @Test
    void aShedRequestGets503AndRetryAfterAndNeverReachesTheServlet() throws Exception {
        Semaphore s = new Semaphore(1);
        AdmissionControl<HttpServletRequest> gate = gate(s, Duration.ZERO);
        AdmissionFilter filter =
                AdmissionFilter.builder(gate).shedReasonHeader("X-Shed-Reason").build();
        try (TestServer server = TestServer.start(filter)) {
            CompletableFuture<HttpResponse<String>> holder = server.getAsync("/b/x?do=park");
            await("the holder in the servlet", () -> server.servlet.invocations.get() == 1, s::toString);
            assertEquals(0, s.availablePermits());

            for (String path : List.of("/b/x", "/sync/x")) {
                HttpResponse<String> shed = server.get(path);
                assertEquals(503, shed.statusCode());
                assertEquals("2", shed.headers().firstValue("Retry-After").orElseThrow(), "1.5 s, rounded up");
                assertEquals(
                        "QUEUE_FULL", shed.headers().firstValue("X-Shed-Reason").orElseThrow());
                assertEquals("", shed.body());
            }
            assertEquals(1, server.servlet.invocations.get(), "the shed requests never ran");
            assertEquals(2, gate.shedCount(ShedReason.QUEUE_FULL));

            server.servlet.completeOne();
            assertEquals(200, holder.join().statusCode());
            allBack(s);
        }
    }

    @Test
    void aRequestThatWaitsTooLongIsShedAsTimedOutWithTheConfiguredStatus() throws Exception {
        Semaphore s = new Semaphore(1);
        AdmissionControl<HttpServletRequest> gate = gate(s, Duration.ofMillis(50));
        AdmissionFilter filter = AdmissionFilter.builder(gate)
                .shedStatus(429)
                .shedReasonHeader("X-Shed-Reason")
                .build();
        try (TestServer server = TestServer.start(filter)) {
            CompletableFuture<HttpResponse<String>> holder = server.getAsync("/b/x?do=park");
            await("the holder in the servlet", () -> server.servlet.invocations.get() == 1, s::toString);
            for (String path : List.of("/b/x", "/sync/x")) {
                HttpResponse<String> shed = server.get(path);
                assertEquals(429, shed.statusCode());
                assertEquals(
                        "TIMED_OUT", shed.headers().firstValue("X-Shed-Reason").orElseThrow());
                assertEquals("2", shed.headers().firstValue("Retry-After").orElseThrow());
            }
            assertEquals(1, server.servlet.invocations.get());
            assertEquals(2, gate.shedCount(ShedReason.TIMED_OUT));
            server.servlet.completeOne();
            assertEquals(200, holder.join().statusCode());
            allBack(s);
        }
    }

    @Test
    void aWaitingRequestIsAdmittedWhenTheRequestAheadFinishes() throws Exception {
        Semaphore s = new Semaphore(1);
        try (TestServer server = TestServer.start(new AdmissionFilter(gate(s, TestServer.PATIENCE)))) {
            CompletableFuture<HttpResponse<String>> first = server.getAsync("/b/x?do=park");
            await("the first in the servlet", () -> server.servlet.invocations.get() == 1, s::toString);
            CompletableFuture<HttpResponse<String>> second = server.getAsync("/b/x");
            CompletableFuture<HttpResponse<String>> third = server.getAsync("/sync/x"); // waits on a thread
            await("two waiting", () -> s.queueLength() == 2, s::toString);
            assertEquals(1, server.servlet.invocations.get(), "the waiting requests have not run");
            assertFalse(second.isDone());

            server.servlet.completeOne();
            assertEquals("done\n", first.join().body());
            assertEquals("ok", second.join().body());
            assertEquals("ok", third.join().body());
            assertEquals(3, server.servlet.invocations.get());
            allBack(s);
        }
    }

    @Test
    void waitingRequestsHoldNoContainerThread() throws Exception {
        Semaphore s = new Semaphore(1);
        int waiters = 60;
        // 16 threads in all, acceptor and selector among them: far fewer than the requests waiting
        try (TestServer server = TestServer.start(
                new AdmissionFilter(gate(s, TestServer.PATIENCE)),
                16,
                EnumSet.of(DispatcherType.REQUEST, DispatcherType.ASYNC))) {
            CompletableFuture<HttpResponse<String>> holder = server.getAsync("/b/x?do=park");
            await("the holder in the servlet", () -> server.servlet.invocations.get() == 1, s::toString);
            List<CompletableFuture<HttpResponse<String>>> waiting = new ArrayList<>();
            for (int i = 0; i < waiters; i++) {
                waiting.add(server.getAsync("/b/x"));
            }
            await("every request waiting", () -> s.queueLength() == waiters, s::toString);
            assertTrue(server.pool.getMaxThreads() < waiters);

            server.servlet.completeOne();
            assertEquals(200, holder.join().statusCode());
            for (CompletableFuture<HttpResponse<String>> w : waiting) {
                assertEquals("ok", w.join().body());
            }
            allBack(s);
        }
    }

    @Test
    void anAsyncServletHoldsItsPermitsUntilItCompletes() throws Exception {
        Semaphore s = new Semaphore(3);
        AdmissionControl<HttpServletRequest> gate = AdmissionControl.<HttpServletRequest>builder()
                .limiter(s)
                .cost(request -> Long.parseLong(request.getHeader("X-Cost")))
                .maxWait(TestServer.PATIENCE)
                .build();
        try (TestServer server = TestServer.start(new AdmissionFilter(gate))) {
            CompletableFuture<HttpResponse<String>> a = server.getAsync("/b/x?do=park", "X-Cost", "2");
            await("a in the servlet", () -> server.servlet.invocations.get() == 1, s::toString);
            assertEquals(1, s.availablePermits(), "a holds 2 while its servlet has returned and its response is open");
            CompletableFuture<HttpResponse<String>> b = server.getAsync("/b/x?do=park", "X-Cost", "2");
            await("b waiting", () -> s.queueLength() == 1, s::toString);
            assertEquals(2, s.queuedPermits());
            assertEquals(0, s.availablePermits(), "the free permit is handed to b, which waits for another");

            server.servlet.completeOne(); // a ends: b is admitted, waiting in a cycle of its own
            assertEquals("done\n", a.join().body());
            await("b in the servlet", () -> server.servlet.invocations.get() == 2, s::toString);
            assertEquals(1, s.availablePermits(), "b holds 2");
            assertEquals(0, s.queueLength());
            assertFalse(b.isDone());

            server.servlet.completeOne();
            assertEquals("done\n", b.join().body());
            allBack(s);
        }
    }

    @Test
    void aStreamingResponseHoldsItsPermitsUntilItsLastByte() throws Exception {
        Semaphore s = new Semaphore(2);
        try (TestServer server = TestServer.start(new AdmissionFilter(gate(s, TestServer.PATIENCE)))) {
            for (String what : List.of("stream", "park-stream")) {
                server.returned.set(0);
                HttpResponse<InputStream> r = server.client.send(
                        server.request("/b/x?do=" + what).build(), HttpResponse.BodyHandlers.ofInputStream());
                assertEquals(200, r.statusCode());
                try (BufferedReader body =
                        new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
                    assertEquals("first", body.readLine());
                    if (what.equals("park-stream")) { // the first line may come before the servlet returns
                        await("the dispatch returned", () -> server.returned.get() == 1, s::toString);
                    }
                    assertEquals(1, s.availablePermits(), what + ": held while the response streams");
                    if (what.equals("stream")) {
                        server.servlet.streamGate.release();
                        assertEquals("last", body.readLine());
                    } else {
                        server.servlet.completeOne();
                        assertEquals("done", body.readLine());
                    }
                    assertEquals(null, body.readLine());
                }
                allBack(s);
            }
        }
    }

    @Test
    void everyWayARequestEndsReleasesItsPermits() throws Exception {
        Semaphore s = new Semaphore(1);
        try (TestServer server = TestServer.start(new AdmissionFilter(gate(s, Duration.ZERO)))) {
            // With one permit and no waiting, each request is admitted only if the one before it
            // gave its permit back.
            String[][] cases = {
                {"/b/x?do=throw", "500"},
                {"/sync/x?do=throw", "500"},
                {"/b/x?do=throw-io", "500"},
                {"/b/x?do=status&status=503", "503"},
                {"/b/x?do=send-error", "500"},
                {"/b/x?do=later&ms=20", "200"},
                {"/b/x?do=async-timeout&ms=200", "500"},
                {"/b/x?do=complete-inline", "200"},
                {"/b/x?do=redispatch", "200"},
                {"/b/x?do=redispatch-throw", "500"},
                {"/b/x?do=forward", "200"},
                {"/b/x", "200"},
            };
            int invocations = 0;
            for (String[] c : cases) {
                allBack(s);
                HttpResponse<String> r = server.get(c[0]);
                assertEquals(Integer.parseInt(c[1]), r.statusCode(), c[0] + ": " + r.body());
                assertTrue(r.headers().firstValue("Retry-After").isEmpty() || c[1].equals("503"), c[0]);
                invocations++;
                assertEquals(invocations, server.servlet.invocations.get(), c[0] + " ran, once");
            }
            allBack(s);
        }
    }

    @Test
    void aRequestThatWaitedReleasesHoweverItsOwnAsyncCycleEnds() throws Exception {
        Semaphore s = new Semaphore(1);
        try (TestServer server = TestServer.start(new AdmissionFilter(gate(s, TestServer.PATIENCE)))) {
            // Each waits behind a parked holder, is dispatched when the holder ends, and then runs
            // a servlet that starts a cycle of its own (or dispatches, or throws, or forwards).
            String[][] cases = {
                {"/b/x?do=later&ms=20", "200"},
                {"/b/x?do=async-timeout&ms=200", "500"},
                {"/b/x?do=complete-inline", "200"},
                {"/b/x?do=redispatch", "200"},
                {"/b/x?do=redispatch-throw", "500"},
                {"/b/x?do=throw", "500"},
                {"/b/x?do=send-error", "500"},
                {"/b/x?do=forward", "200"},
                {"/b/x?do=park", "200"},
            };
            for (String[] c : cases) {
                allBack(s);
                int before = server.servlet.invocations.get();
                CompletableFuture<HttpResponse<String>> holder = server.getAsync("/b/x?do=park");
                await("the holder in the servlet", () -> server.servlet.invocations.get() == before + 1, s::toString);
                CompletableFuture<HttpResponse<String>> waiter = server.getAsync(c[0]);
                await(c[0] + " waiting", () -> s.queueLength() == 1, s::toString);
                server.servlet.completeOne();
                assertEquals(200, holder.join().statusCode());
                if (c[0].endsWith("park")) {
                    await(
                            "the waiter in the servlet",
                            () -> server.servlet.invocations.get() == before + 2,
                            s::toString);
                    assertEquals(0, s.availablePermits(), "held while the waiter's own cycle is open");
                    server.servlet.completeOne();
                }
                HttpResponse<String> r = waiter.join();
                assertEquals(Integer.parseInt(c[1]), r.statusCode(), c[0] + ": " + r.body());
            }
            allBack(s);
        }
    }

    @Test
    void aRequestIsAdmittedOncePerFilterWhateverItsDispatches() throws Exception {
        Semaphore s = new Semaphore(1);
        try (TestServer server = TestServer.start(
                new AdmissionFilter(gate(s, Duration.ZERO)), 200, EnumSet.allOf(DispatcherType.class))) {
            // a forward, an error page and the servlet's own dispatch pass the filter again: with a
            // second admission, the only permit would be taken and the pass shed
            for (String path : List.of("/b/x?do=forward", "/b/x?do=send-error", "/b/x?do=redispatch")) {
                HttpResponse<String> r = server.get(path);
                assertTrue(r.statusCode() != 503, path + ": " + r.statusCode() + " " + r.body());
                allBack(s);
            }
        }
    }

    @Test
    void theFilterAsksForHttpAndItsOptionsAreChecked() {
        Semaphore s = new Semaphore(1);
        AdmissionControl<HttpServletRequest> gate = gate(s, Duration.ZERO);
        assertThrows(NullPointerException.class, () -> new AdmissionFilter(null));
        assertThrows(
                IllegalArgumentException.class,
                () -> AdmissionFilter.builder(gate).shedStatus(302));
        assertThrows(
                IllegalArgumentException.class,
                () -> AdmissionFilter.builder(gate).shedStatus(600));
        assertThrows(
                IllegalArgumentException.class,
                () -> AdmissionFilter.builder(gate).shedReasonHeader(" "));
        assertThrows(
                NullPointerException.class, () -> AdmissionFilter.builder(gate).shedReasonHeader(null));
        assertThrows(
                NullPointerException.class, () -> AdmissionFilter.builder(gate).outcomes(null));
        AdmissionFilter filter = new AdmissionFilter(gate);
        assertEquals(gate, filter.gate());
        assertThrows(
                jakarta.servlet.ServletException.class,
                () -> filter.doFilter(
                        (jakarta.servlet.ServletRequest) java.lang.reflect.Proxy.newProxyInstance(
                                getClass().getClassLoader(),
                                new Class<?>[] {jakarta.servlet.ServletRequest.class},
                                (proxy, method, args) -> null),
                        null,
                        (request, response) -> {}));
        assertEquals(1, s.availablePermits());
    }
}
