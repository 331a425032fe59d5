// SPDX-License-Identifier: Apache-2.0
package dev.handoff.servlet;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * A real Jetty 12.1 (ee10) on a loopback port chosen by the system, with an {@link AdmissionFilter}
 * in front of {@link Behaviours}: under {@code /b/} (async supported) and {@code /sync/} (not), each
 * request does what its {@code do} parameter says. The client is the JDK's {@link HttpClient}.
 */
final class TestServer implements AutoCloseable {
    /** The longest any test waits for something it polls for: a guard against a hang, not a measurement. */
    static final Duration PATIENCE = Duration.ofSeconds(30);

    final Server server;
    final QueuedThreadPool pool;
    final ServerConnector connector;
    final Behaviours servlet = new Behaviours();
    /** How many dispatches have returned through a filter mapped before the admission filter. */
    final AtomicInteger returned = new AtomicInteger();

    final HttpClient client = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10))
            .build();

    private TestServer(AdmissionFilter filter, int maxThreads, EnumSet<DispatcherType> dispatches) throws Exception {
        pool = new QueuedThreadPool(maxThreads, Math.min(8, maxThreads));
        pool.setName("jetty");
        server = new Server(pool);
        connector = new ServerConnector(server, 1, 1);
        connector.setHost("127.0.0.1");
        connector.setPort(0);
        server.addConnector(connector);
        ServletContextHandler context = new ServletContextHandler();
        context.setContextPath("/");
        FilterHolder probe = new FilterHolder((Filter) (request, response, chain) -> {
            try {
                chain.doFilter(request, response);
            } finally {
                returned.incrementAndGet();
            }
        });
        probe.setAsyncSupported(true);
        context.addFilter(probe, "/*", dispatches);
        FilterHolder admission = new FilterHolder(filter);
        admission.setAsyncSupported(true);
        context.addFilter(admission, "/*", dispatches);
        ServletHolder async = new ServletHolder("async", servlet);
        async.setAsyncSupported(true);
        context.addServlet(async, "/b/*");
        ServletHolder blocking = new ServletHolder("blocking", servlet);
        blocking.setAsyncSupported(false);
        context.addServlet(blocking, "/sync/*");
        ServletHolder forwarded = new ServletHolder("forwarded", new HttpServlet() {
            @Override
            protected void service(HttpServletRequest req, HttpServletResponse res) throws IOException {
                res.getWriter().write("forwarded");
            }
        });
        forwarded.setAsyncSupported(true);
        context.addServlet(forwarded, "/fwd/*");
        server.setHandler(context);
        server.start();
    }

    /** The filter mapped for REQUEST and ASYNC dispatches, as its documentation asks. */
    static TestServer start(AdmissionFilter filter) throws Exception {
        return new TestServer(filter, 200, EnumSet.of(DispatcherType.REQUEST, DispatcherType.ASYNC));
    }

    static TestServer start(AdmissionFilter filter, int maxThreads, EnumSet<DispatcherType> dispatches)
            throws Exception {
        return new TestServer(filter, maxThreads, dispatches);
    }

    int port() {
        return connector.getLocalPort();
    }

    URI uri(String pathAndQuery) {
        return URI.create("http://127.0.0.1:" + port() + pathAndQuery);
    }

    HttpRequest.Builder request(String pathAndQuery, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri(pathAndQuery)).timeout(PATIENCE);
        return headers.length == 0 ? b : b.headers(headers);
    }

    HttpResponse<String> get(String pathAndQuery, String... headers) throws IOException, InterruptedException {
        return client.send(request(pathAndQuery, headers).build(), HttpResponse.BodyHandlers.ofString());
    }

    CompletableFuture<HttpResponse<String>> getAsync(String pathAndQuery, String... headers) {
        return client.sendAsync(request(pathAndQuery, headers).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Sends a request on a plain socket and closes it without reading the answer. */
    void sendAndHangUp(String pathAndQuery, boolean waitForFirstByte) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port())) {
            socket.setSoTimeout(2_000);
            OutputStream out = socket.getOutputStream();
            out.write(("GET " + pathAndQuery + " HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Tenant: socket\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            if (waitForFirstByte) {
                InputStream in = socket.getInputStream();
                try {
                    in.read();
                } catch (IOException timedOut) {
                    // hang up all the same
                }
            }
        }
    }

    @Override
    public void close() throws Exception {
        servlet.timer.shutdownNow();
        server.stop();
    }

    /** Polls {@code condition} until it holds; fails after {@link #PATIENCE} with {@code state}. */
    static void await(String what, BooleanSupplier condition, Supplier<?> state) throws InterruptedException {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("never came: " + what + "; now " + state.get());
            }
            Thread.sleep(2);
        }
    }

    /**
     * The servlet of every test. {@code do=}: {@code ok} (the default), {@code status} (answers
     * {@code status=}), {@code throw}, {@code throw-io}, {@code park} (starts a cycle that a test
     * completes with {@link #completeOne()}), {@code park-stream} (writes and flushes a first line,
     * then parks), {@code stream} (a first line, then waits for {@link #streamGate} before the last),
     * {@code sleep} ({@code ms=}), {@code later} (a cycle completed after {@code ms=}),
     * {@code async-timeout} (a cycle of {@code ms=} that nobody completes), {@code complete-inline}
     * (a cycle completed before the servlet returns), {@code redispatch} and
     * {@code redispatch-throw} (a cycle the servlet dispatches itself; its second pass answers or
     * throws), {@code forward} (to {@code /fwd/}), {@code send-error}.
     */
    static final class Behaviours extends HttpServlet {
        final AtomicInteger invocations = new AtomicInteger();
        /** The X-Tenant of each request as it reaches the servlet, in order. */
        final List<String> arrivals = new ArrayList<>();

        final BlockingQueue<AsyncContext> parked = new LinkedBlockingQueue<>();
        /** How many parked requests {@link #completeOne()} has completed. */
        final AtomicInteger completed = new AtomicInteger();

        final java.util.concurrent.Semaphore streamGate = new java.util.concurrent.Semaphore(0);
        final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "behaviours-timer");
            t.setDaemon(true);
            return t;
        });

        synchronized List<String> arrivals() {
            return new ArrayList<>(arrivals);
        }

        /** Completes the oldest parked request, writing {@code done}. */
        void completeOne() throws Exception {
            AsyncContext cycle = parked.poll(PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
            if (cycle == null) {
                throw new AssertionError("no parked request to complete");
            }
            try {
                cycle.getResponse().getWriter().write("done\n");
            } finally {
                completed.incrementAndGet();
                cycle.complete();
            }
        }

        @Override
        protected void service(HttpServletRequest req, HttpServletResponse res) throws IOException, ServletException {
            if (req.getAttribute("second-pass") != null) {
                if ("redispatch-throw".equals(req.getParameter("do"))) {
                    throw new IllegalStateException("the servlet's second pass failed");
                }
                res.getWriter().write("second pass");
                return;
            }
            invocations.incrementAndGet();
            synchronized (this) {
                arrivals.add(String.valueOf(req.getHeader("X-Tenant")));
            }
            String what = req.getParameter("do");
            switch (what == null ? "ok" : what) {
                case "ok":
                    res.getWriter().write("ok");
                    return;
                case "status":
                    res.setStatus(Integer.parseInt(req.getParameter("status")));
                    res.getWriter().write("status");
                    return;
                case "throw":
                    throw new IllegalStateException("the handler failed");
                case "throw-io":
                    throw new IOException("the handler failed to write");
                case "park": {
                    AsyncContext cycle = req.startAsync();
                    cycle.setTimeout(0);
                    parked.add(cycle);
                    return;
                }
                case "park-stream": {
                    res.getWriter().write("first\n");
                    res.flushBuffer();
                    AsyncContext cycle = req.startAsync();
                    cycle.setTimeout(0);
                    parked.add(cycle);
                    return;
                }
                case "stream":
                    res.getWriter().write("first\n");
                    res.flushBuffer();
                    try {
                        streamGate.acquire();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IOException(e);
                    }
                    res.getWriter().write("last\n");
                    return;
                case "sleep":
                    try {
                        Thread.sleep(Long.parseLong(req.getParameter("ms")));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    res.getWriter().write("slept");
                    return;
                case "later": {
                    AsyncContext cycle = req.startAsync();
                    cycle.setTimeout(0);
                    timer.schedule(
                            () -> {
                                try {
                                    cycle.getResponse().getWriter().write("later");
                                } catch (IOException | RuntimeException e) {
                                    // the client is gone
                                } finally {
                                    try {
                                        cycle.complete();
                                    } catch (IllegalStateException e) {
                                        // the request ended otherwise
                                    }
                                }
                            },
                            Long.parseLong(req.getParameter("ms")),
                            TimeUnit.MILLISECONDS);
                    return;
                }
                case "async-timeout": {
                    AsyncContext cycle = req.startAsync();
                    cycle.setTimeout(Long.parseLong(req.getParameter("ms")));
                    return;
                }
                case "complete-inline": {
                    AsyncContext cycle = req.startAsync();
                    cycle.getResponse().getWriter().write("completed inline");
                    cycle.complete();
                    return;
                }
                case "redispatch":
                case "redispatch-throw": {
                    AsyncContext cycle = req.startAsync();
                    req.setAttribute("second-pass", true);
                    cycle.dispatch();
                    return;
                }
                case "forward":
                    req.getRequestDispatcher("/fwd/x").forward(req, res);
                    return;
                case "send-error":
                    res.sendError(500, "sent");
                    return;
                default:
                    throw new IllegalArgumentException("do=" + what);
            }
        }
    }
}
