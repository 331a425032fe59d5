// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.handoff.FairShareSemaphore;
import dev.handoff.edge.AdmissionControl;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.EnumSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the examples of docs/integrations/servlet.md ({@link ServletFilter}) on a real Jetty (ee10):
 * an admitted request, a handler that fails after its admission, and a request shed by the gate
 * itself; every path gives its permits back.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ServletSnippetsTest {
    final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    /** A servlet that answers 200, or throws with {@code ?fail}. */
    static final class Handler extends HttpServlet {
        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse res) throws java.io.IOException {
            if (req.getParameter("fail") != null) {
                throw new IllegalStateException("the handler failed after its admission");
            }
            res.getWriter().write("ok");
        }
    }

    static Server start(Consumer<ServletContextHandler> setUp) throws Exception {
        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(0);
        server.addConnector(connector);
        ServletContextHandler context = new ServletContextHandler();
        context.setContextPath("/");
        setUp.accept(context);
        ServletHolder handler = new ServletHolder(new Handler());
        handler.setAsyncSupported(true);
        context.addServlet(handler, "/api/*");
        server.setHandler(context);
        server.start();
        return server;
    }

    HttpResponse<String> get(Server server, String pathAndQuery) throws Exception {
        int port = ((ServerConnector) server.getConnectors()[0]).getLocalPort();
        return client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + pathAndQuery)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    static void allBack(FairShareSemaphore<?> fs) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (fs.availablePermits() != fs.capacity() && System.nanoTime() < deadline) {
            Thread.sleep(2); // a release may follow the answer
        }
        assertEquals(fs.capacity(), fs.availablePermits());
        assertEquals(0, fs.queueLength());
    }

    @Test
    void theRegisteredFilterAdmitsFailsAndSheds() throws Exception {
        AtomicReference<AdmissionControl<HttpServletRequest>> gate = new AtomicReference<>();
        Server server = start(context -> context.addServletContainerInitializer(
                (classes, servletContext) -> gate.set(ServletFilter.register(servletContext))));
        try {
            FairShareSemaphore<?> fs = (FairShareSemaphore<?>) gate.get().primitive();
            assertEquals("ok", get(server, "/api/x").body()); // no X-Tenant: "anonymous"
            allBack(fs);
            assertEquals(500, get(server, "/api/x?fail").statusCode());
            allBack(fs);
            gate.get().close(); // the gate itself refuses: shed, the handler not run
            HttpResponse<String> shed = get(server, "/api/x");
            assertEquals(503, shed.statusCode());
            assertEquals("1", shed.headers().firstValue("Retry-After").orElseThrow());
            allBack(fs);
        } finally {
            server.stop();
        }
    }

    @Test
    void theOptionsShedWithTheirStatusAndReason() throws Exception {
        AdmissionControl<HttpServletRequest> gate = AdmissionControl.<HttpServletRequest>builder()
                .capacity(4)
                .key(request -> "tenant", tenant -> 1)
                .build();
        Server server = start(context -> {
            FilterHolder admission = new FilterHolder(ServletFilter.withOptions(gate));
            admission.setAsyncSupported(true);
            context.addFilter(admission, "/*", EnumSet.of(DispatcherType.REQUEST, DispatcherType.ASYNC));
        });
        try {
            FairShareSemaphore<?> fs = (FairShareSemaphore<?>) gate.primitive();
            assertEquals("ok", get(server, "/api/x").body());
            assertEquals(500, get(server, "/api/x?fail").statusCode());
            allBack(fs);
            gate.close();
            HttpResponse<String> shed = get(server, "/api/x");
            assertEquals(429, shed.statusCode());
            assertEquals("CLOSED", shed.headers().firstValue("X-Shed-Reason").orElseThrow());
            allBack(fs);
        } finally {
            server.stop();
        }
    }
}
