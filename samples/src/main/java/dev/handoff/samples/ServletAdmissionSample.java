// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Semaphore;
import dev.handoff.edge.AdmissionControl;
import dev.handoff.servlet.AdmissionFilter;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * Sample 23: a noisy tenant and a polite one over real HTTP, on Jetty, behind the servlet
 * {@link AdmissionFilter}.
 *
 * <p>A service of {@link #CAPACITY} requests in flight, each taking {@link #SERVICE_MS} ms (an
 * asynchronous servlet: no thread is held while it works, nor while a request waits for admission).
 * The noisy tenant keeps {@link #NOISY_IN_FLIGHT} requests outstanding all the time; meanwhile the
 * polite tenant sends {@link #POLITE_REQUESTS} requests one after the other. It runs twice: with a
 * plain FIFO gate, where each polite request queues behind the noisy backlog (or is shed with it),
 * and with the gate keyed by the {@code X-Tenant} header, where it waits behind about one request
 * of the noisy tenant. It prints, for both, the polite tenant's median and longest time to an
 * answer, how many of each tenant's requests were answered and shed, and whether every permit came
 * back.
 */
public final class ServletAdmissionSample {

    static final int CAPACITY = 4;
    static final long SERVICE_MS = 20;
    static final int NOISY_IN_FLIGHT = 24;
    static final int POLITE_REQUESTS = 10;

    /** One run's figures; times in milliseconds. */
    public record Run(
            String gate,
            int politeServed,
            int politeShed,
            long politeMedianMs,
            long politeLongestMs,
            int noisyServed,
            int noisyShed,
            boolean allPermitsBack) {}

    /** The same load in front of a FIFO gate and of a gate fair across tenants. */
    public record Figures(Run fifo, Run fair) {}

    private ServletAdmissionSample() {}

    /** Runs the load twice, FIFO then fair, and returns the figures. */
    public static Figures run() throws Exception {
        return new Figures(run(false), run(true));
    }

    private static Run run(boolean fair) throws Exception {
        AdmissionControl.Builder<HttpServletRequest> builder = AdmissionControl.<HttpServletRequest>builder()
                .capacity(CAPACITY)
                .maxWait(Duration.ofSeconds(2))
                .maxQueueLength(64)
                .retryAfter(Duration.ofSeconds(1));
        if (fair) {
            builder.key(request -> request.getHeader("X-Tenant"), tenant -> 1);
        }
        AdmissionControl<HttpServletRequest> gate = builder.build();
        LongSupplier available = fair
                ? ((FairShareSemaphore<?>) gate.primitive())::availablePermits
                : ((Semaphore) gate.primitive())::availablePermits;

        ScheduledExecutorService work = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "sample-work");
            t.setDaemon(true);
            return t;
        });
        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(0);
        server.addConnector(connector);
        ServletContextHandler context = new ServletContextHandler();
        context.setContextPath("/");
        FilterHolder admission = new FilterHolder(new AdmissionFilter(gate));
        admission.setAsyncSupported(true);
        context.addFilter(admission, "/*", EnumSet.of(DispatcherType.REQUEST, DispatcherType.ASYNC));
        ServletHolder service = new ServletHolder(new HttpServlet() {
            @Override
            protected void doGet(HttpServletRequest req, HttpServletResponse res) {
                AsyncContext cycle = req.startAsync();
                work.schedule(
                        () -> {
                            try {
                                cycle.getResponse().getWriter().write("ok");
                            } catch (IOException e) {
                                // the client went away
                            } finally {
                                cycle.complete();
                            }
                        },
                        SERVICE_MS,
                        TimeUnit.MILLISECONDS);
            }
        });
        service.setAsyncSupported(true);
        context.addServlet(service, "/api/*");
        server.setHandler(context);
        server.start();
        try {
            URI uri = URI.create("http://127.0.0.1:" + connector.getLocalPort() + "/api/report");
            HttpClient client =
                    HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            AtomicInteger noisyServed = new AtomicInteger();
            AtomicInteger noisyShed = new AtomicInteger();
            java.util.concurrent.Semaphore noisySlots = new java.util.concurrent.Semaphore(NOISY_IN_FLIGHT);
            List<CompletableFuture<?>> noisy = Collections.synchronizedList(new ArrayList<>());
            HttpRequest noisyRequest = HttpRequest.newBuilder(uri)
                    .header("X-Tenant", "noisy")
                    .timeout(Duration.ofSeconds(30))
                    .build();
            Thread flood = new Thread(() -> {
                try {
                    while (!Thread.currentThread().isInterrupted()) {
                        noisySlots.acquire();
                        noisy.add(client.sendAsync(noisyRequest, HttpResponse.BodyHandlers.discarding())
                                .whenComplete((r, e) -> {
                                    (r != null && r.statusCode() == 200 ? noisyServed : noisyShed).incrementAndGet();
                                    noisySlots.release();
                                }));
                    }
                } catch (InterruptedException stop) {
                    // the polite tenant is done
                }
            });
            flood.start();
            // let the flood build its backlog first
            while (noisySlots.availablePermits() > 0) {
                Thread.sleep(5);
            }
            Thread.sleep(200);

            HttpRequest politeRequest = HttpRequest.newBuilder(uri)
                    .header("X-Tenant", "polite")
                    .timeout(Duration.ofSeconds(30))
                    .build();
            List<Long> times = new ArrayList<>();
            int politeServed = 0;
            int politeShed = 0;
            for (int i = 0; i < POLITE_REQUESTS; i++) {
                long start = System.nanoTime();
                HttpResponse<Void> r = client.send(politeRequest, HttpResponse.BodyHandlers.discarding());
                times.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
                if (r.statusCode() == 200) {
                    politeServed++;
                } else {
                    politeShed++;
                }
            }
            flood.interrupt();
            flood.join();
            for (CompletableFuture<?> f : new ArrayList<>(noisy)) {
                f.handle((r, e) -> null).get(30, TimeUnit.SECONDS);
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (available.getAsLong() != CAPACITY && System.nanoTime() < deadline) {
                Thread.sleep(5); // the last releases may follow the last answers
            }
            Collections.sort(times);
            return new Run(
                    fair ? "fair across tenants" : "FIFO",
                    politeServed,
                    politeShed,
                    times.get(times.size() / 2),
                    times.get(times.size() - 1),
                    noisyServed.get(),
                    noisyShed.get(),
                    available.getAsLong() == CAPACITY);
        } finally {
            server.stop();
            work.shutdownNow();
        }
    }

    /** Runs the sample and prints its figures ({@code args} are ignored). */
    public static void main(String[] args) throws Exception {
        System.out.println("23. A noisy tenant and a polite one over HTTP, behind the servlet AdmissionFilter (Jetty)");
        Figures f = run();
        for (Run r : new Run[] {f.fifo(), f.fair()}) {
            System.out.printf(
                    "   %-20s polite: %2d served, %2d shed, median %,5d ms, longest %,5d ms;"
                            + " noisy: %,5d served, %,5d shed%n",
                    r.gate() + ":",
                    r.politeServed(),
                    r.politeShed(),
                    r.politeMedianMs(),
                    r.politeLongestMs(),
                    r.noisyServed(),
                    r.noisyShed());
        }
        System.out.printf(
                "   every permit back at the end: %b%n",
                f.fifo().allPermitsBack() && f.fair().allPermitsBack());
    }
}
