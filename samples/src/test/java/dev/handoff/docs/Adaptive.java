// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

// tag::adaptive-quick-start[]
import dev.handoff.Semaphore;
import dev.handoff.adaptive.AdaptiveCapacity;
import dev.handoff.adaptive.SampledPermits;
// end::adaptive-quick-start[]
// tag::adaptive-netflix[]
import com.netflix.concurrency.limits.limit.Gradient2Limit;
// end::adaptive-netflix[]
// tag::adaptive-fair-share[]
import dev.handoff.FairShareSemaphore;
import dev.handoff.adaptive.AdaptiveFairShare;
// end::adaptive-fair-share[]
// tag::adaptive-metrics[]
import dev.handoff.micrometer.AdaptiveCapacityMetrics;
// end::adaptive-metrics[]
// tag::adaptive-reactor[]
import dev.handoff.reactor.ReactorAdaptive;
import java.time.Duration;
import reactor.core.publisher.Mono;
// end::adaptive-reactor[]
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** The Java examples of docs/guide/adaptive.md, over a stand-in client. */
final class Adaptive {

    /** A response with a status. */
    record Response(int status) {
        static Response status(int status) {
            return new Response(status);
        }
    }

    /** What the examples call: the downstream. */
    interface Client {
        Response send(String request) throws Exception;

        CompletableFuture<Response> sendAsync(String request);

        Mono<Response> sendReactive(String request);
    }

    private final Client client;

    Adaptive(Client client) {
        this.client = client;
    }

    // tag::adaptive-quick-start[]
    final Semaphore inFlight = Semaphore.builder(20)   // the starting capacity
            .maxQueueLength(1_000)                     // shed beyond this many waiters
            .build();
    final AdaptiveCapacity adaptive = AdaptiveCapacity.builder(inFlight)
            .minCapacity(4)                            // never below (a call may take up to the present capacity)
            .maxCapacity(500)                          // never above
            .build();

    Response call(String request) throws Exception {
        // Timed and classified: a TimeoutException is a drop, another exception a failure.
        return adaptive.withPermitsBlocking(1, () -> client.send(request));
    }

    CompletableFuture<Response> callAsync(String request) {
        // The permits are held until the stage completes; orTimeout's TimeoutException is a drop.
        return adaptive.withPermitsAsync(1,
                () -> client.sendAsync(request).orTimeout(2, TimeUnit.SECONDS));
    }

    Response callWithHandle(String request) throws Exception {
        try (SampledPermits p = adaptive.acquireBlocking(1)) {
            Response r = client.send(request);
            if (r.status() == 503) {
                p.markDropped();                       // overload: the capacity shrinks
            }
            return r;                                  // an exception passing through counts as a success:
        }                                              // catch and mark, or use withPermitsBlocking
    }

    Response shed(String request) throws Exception {
        SampledPermits p = adaptive.tryAcquire(1);    // never waits
        if (p == null) {
            return Response.status(503);              // recorded as a rejection
        }
        try (p) {
            return client.send(request);
        }
    }
    // end::adaptive-quick-start[]

    // tag::adaptive-reactor[]
    Mono<Response> callReactive(String request) {
        // Acquired on subscribe, released once however it ends. The timeout inside the body is
        // a drop; a cancel from outside (a timeout after the operator, a dispose) is a failure.
        return ReactorAdaptive.withPermits(adaptive, 1,
                () -> client.sendReactive(request).timeout(Duration.ofSeconds(2)));
    }
    // end::adaptive-reactor[]

    // tag::adaptive-fair-share[]
    final FairShareSemaphore<String> database = FairShareSemaphore.<String>builder(20)  // the starting capacity
            .share(tenant -> tenant.startsWith("premium-") ? 4 : 1)                     // a premium tenant weighs 4
            .build();
    final AdaptiveFairShare<String> tenants = AdaptiveFairShare.builder(database)
            .minCapacity(4)
            .maxCapacity(200)
            .build();

    Response query(String tenant, String request) throws Exception {
        // One capacity, sized from every tenant's calls, divided by share among the tenants that wait.
        return tenants.withPermitsBlocking(tenant, 1, () -> client.send(request));
    }
    // end::adaptive-fair-share[]

    static AdaptiveCapacity netflix(Semaphore inFlight) {
        // tag::adaptive-netflix[]
        AdaptiveCapacity adaptive = AdaptiveCapacity.builder(inFlight)
                .limit(Gradient2Limit.newDefault())   // or VegasLimit, AIMDLimit, GradientLimit, WindowedLimit...
                .build();
        // end::adaptive-netflix[]
        return adaptive;
    }

    static AdaptiveCapacity metered(MeterRegistry registry, Semaphore inFlight, List<String> log) {
        // tag::adaptive-metrics[]
        AdaptiveCapacity adaptive = AdaptiveCapacityMetrics.monitor(registry, "downstream", // the name tag
                AdaptiveCapacity.builder(inFlight)
                        .maxCapacity(500)
                        .listener((from, to, reason) ->                  // your own listener stays:
                                log.add(from + " -> " + to + " " + reason)));  // the metrics are added beside it
        // end::adaptive-metrics[]
        return adaptive;
    }
}
